"""The ``git`` source: recent commits or merges of a local repository, one facet per commit,
or one file of a repository's branch (``file``), one facet: its blob id.

It runs the real ``git`` binary with hooks, pagers and the system config
switched off, so a repository cannot make a read run code. The window is
measured from the caller's ``now`` against committer dates, which is what
makes a pinned clock (``HZ_NOW``) give the same answer every time. A file
is read from the shallow cache the team substrate keeps for discovery
(``TeamRepo.snapshot``), with its timeouts and process-group kill, so a
URL reads as a path does and the repository's own config is never used.
"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.adapters.sources.base import (
    OUTPUT_CAP_BYTES,
    FetchResult,
    SourceRequest,
    as_utc,
    resolve_path,
    sha256_hex,
)
from hz_kernel.contracts.model import GitFileArgs
from hz_kernel.errors import HzError
from hz_kernel.team.git import GitFailed, git
from hz_kernel.team.repo import TeamRepo, is_url

GIT_TIMEOUT_SECONDS = 8.0
FIELD = "\x1f"
RECORD = "\x1e"
LOG_FORMAT = "%H%x1f%h%x1f%ct%x1f%cI%x1f%an%x1f%s%x1f%b%x1e"
WINDOW_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
PULL_REQUEST = re.compile(r"^Merge pull request #(?P<number>\d+) from (?P<branch>\S+)")
MERGED_BRANCH = re.compile(r"^Merge (?:remote-tracking )?branch '(?P<branch>[^']+)'")


class LogArgs(BaseModel):
    """``window`` like ``"7d"`` (m, h, d, w); without one the newest ``limit`` commits count."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    repo: str = Field(min_length=1)
    branch: str = "HEAD"
    window: str | None = None
    limit: int = Field(default=500, ge=1, le=10000)


class Commit(BaseModel):
    """One line of ``git log`` in the fixed format this source asks for."""

    model_config = ConfigDict(defer_build=True)

    sha: str
    short: str
    committed: datetime
    date: str
    author: str
    subject: str
    body: str


def parse_window(window: str, place: str) -> timedelta:
    """Turn ``"7d"`` into seven days; anything else is a bad argument."""
    match = re.fullmatch(r"(\d+)([mhdw])", window.strip())
    if match is None or int(match.group(1)) == 0:
        raise HzError(
            "HZT011", f"bad window {window!r}: use a number and m, h, d or w, like '7d'", place
        )
    return timedelta(**{WINDOW_UNITS[match.group(2)]: int(match.group(1))})


def merge_title(commit: Commit) -> str:
    """A readable title for a merge: the pull request's title, or the branch it brought in."""
    first_body_line = next((line for line in commit.body.splitlines() if line.strip()), "")
    pull = PULL_REQUEST.match(commit.subject)
    if pull is not None:
        title = first_body_line.strip() or pull.group("branch")
        return f"#{pull.group('number')} {title} ({pull.group('branch')})"
    branch = MERGED_BRANCH.match(commit.subject)
    if branch is not None:
        return f"branch {branch.group('branch')}"
    return commit.subject


SAFE_OPTIONS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "i18n.logOutputEncoding=UTF-8",
    "--no-pager",
)
"""Options before the subcommand of every git read: no hooks, no fsmonitor, no pager."""


def git_env() -> dict[str, str]:
    """The environment of a git read: no system config, pager, prompt or optional locks."""
    return {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
    }


def file_remote(repo: str, base_dir: Path | None) -> str:
    """The remote a ``file`` input fetches from: a URL as given, a path anchored at
    ``base_dir`` and made absolute (links kept, as the team substrate names a repository)."""
    repo = repo.strip()
    return repo if is_url(repo) else os.path.normpath(resolve_path(repo, base_dir))


class GitSource:
    """Reads a repository's log, or one file of it; a relative ``repo`` resolves against
    ``base_dir``. A file is fetched into a cache under ``home`` (without one it is not read)."""

    kind = "git"
    methods = frozenset({"commits", "merged_pull_requests", "file"})
    replay_safe = True

    def __init__(self, base_dir: Path | None = None, home: Path | None = None) -> None:
        self.base_dir = base_dir
        self.home = home

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None = None
    ) -> FetchResult:
        if request.method == "file":
            return self._file(request, as_utc(now))
        args = request.parse_args(LogArgs)
        now = as_utc(now)
        repo = resolve_path(args.repo, self.base_dir)
        place = str(repo)
        if args.branch.startswith("-") or not args.branch.strip():
            raise HzError("HZT011", f"bad branch {args.branch!r}", place)
        cutoff = now - parse_window(args.window, place) if args.window else None
        if not repo.is_dir():
            raise HzError("HZT030", "the repository directory does not exist", place)
        merges_only = request.method == "merged_pull_requests"
        commits = [
            commit
            for commit in self._log(repo, args, cutoff, merges_only=merges_only)
            if commit.committed <= now and (cutoff is None or commit.committed > cutoff)
        ]
        facets: dict[str, str] = {}
        content: dict[str, str] = {}
        for commit in commits:
            title = merge_title(commit) if merges_only else commit.subject
            facets[commit.sha] = sha256_hex(
                f"{commit.sha}\n{title}\n{commit.author}\n{commit.date}"
            )
            content[commit.sha] = f"{commit.short} {commit.date} {commit.author}: {title}"
        cursor = commits[0].sha if commits else None
        return FetchResult(
            request=request, facets=facets, content=content, cursor=cursor, as_of=now
        )

    def _file(self, request: SourceRequest, now: datetime) -> FetchResult:
        """The file at ``path`` on ``branch``: one facet named by the path, its blob id (a hash
        of the content, so only an edit moves it). Over 1 MiB or binary, it is not shown."""
        args = request.parse_args(GitFileArgs)
        remote = file_remote(args.repo, self.base_dir)
        if self.home is None:
            raise HzError("HZT033", "a git file is read only within a home", remote)
        branch = args.branch or "HEAD"
        try:
            with TeamRepo(self.home, remote).snapshot(branch) as (cache, ref):
                found = git(
                    cache, "cat-file", "--batch-check", stdin=f"{ref}:{args.path}\n".encode()
                )
                kind, oid, size = _object(found.stdout.decode(errors="replace"))
                if kind != "blob":
                    raise HzError("HZT035", f"no file {args.path!r} on {branch}", remote)
                data = (
                    git(cache, "cat-file", "blob", oid).stdout if size <= OUTPUT_CAP_BYTES else b""
                )
        except GitFailed as exc:
            raise _fetch_failure(exc, branch, remote) from None
        if size > OUTPUT_CAP_BYTES:
            text = f"[hz: {size} bytes, over the 1 MiB limit; not shown]"
        elif b"\0" in data:
            text = f"[hz: binary file of {size} bytes; not shown]"
        else:
            text = data.decode("utf-8", errors="replace")
        return FetchResult(
            request=request,
            facets={args.path: oid},
            content={args.path: text},
            cursor=oid,
            as_of=now,
        )

    def _log(
        self, repo: Path, args: LogArgs, cutoff: datetime | None, *, merges_only: bool
    ) -> list[Commit]:
        place = str(repo)
        command = [
            "git",
            "-C",
            str(repo),
            *SAFE_OPTIONS,
            "log",
            f"--format={LOG_FORMAT}",
            f"--max-count={args.limit}",
            "--no-color",
            "--no-show-signature",
        ]
        if merges_only:
            command.append("--merges")
        if cutoff is not None:
            command.append(f"--since={cutoff.astimezone(UTC).isoformat()}")
        # Left implicit, HEAD lets git report an empty repository rather than a bad revision.
        if args.branch != "HEAD":
            command.append(args.branch)
        command.append("--")
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                env=git_env(),
                timeout=GIT_TIMEOUT_SECONDS,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise HzError("HZT034", "the git program is not installed", place) from None
        except subprocess.TimeoutExpired:
            raise HzError(
                "HZT032", f"git log took longer than {GIT_TIMEOUT_SECONDS:g} s", place
            ) from None
        stderr = done.stderr.decode("utf-8", errors="replace")
        if done.returncode != 0:
            if "does not have any commits yet" in stderr:
                return []
            raise self._failure(stderr, args.branch, place)
        return parse_log(done.stdout.decode("utf-8", errors="replace"))

    @staticmethod
    def _failure(stderr: str, branch: str, place: str) -> HzError:
        first = next((line for line in stderr.splitlines() if line.strip()), "git log failed")
        if "not a git repository" in stderr:
            return HzError("HZT030", "not a git repository", place)
        if "unknown revision" in stderr or "bad revision" in stderr:
            return HzError("HZT031", f"no branch or revision {branch!r}", place)
        return HzError("HZT033", f"git log failed: {first.strip()}", place)


def _object(line: str) -> tuple[str, str, int]:
    """(type, id, size) from a ``cat-file --batch-check`` line; ``missing`` when none."""
    fields = line.split()
    if len(fields) == 3 and fields[2].isdigit():
        return fields[1], fields[0], int(fields[2])
    return "missing", "", 0


def _fetch_failure(exc: GitFailed, branch: str, remote: str) -> HzError:
    """A failed fetch in the source's codes: no such branch, no repository, slow, other."""
    if "couldn't find remote ref" in exc.stderr:
        return HzError("HZT031", f"no branch or tag {branch!r}", remote)
    if exc.message.startswith("cannot run git"):
        return HzError("HZT034", "the git program cannot be run", remote)
    if exc.message.startswith("no answer within"):
        return HzError("HZT032", f"git fetch got {exc.message}", remote)
    if (
        "not a git repository" in exc.stderr
        or "does not appear to be a git repository" in exc.stderr
    ):
        return HzError("HZT030", "not a git repository, or it cannot be reached", remote)
    return HzError("HZT033", f"git fetch failed: {exc.message}", remote)


def parse_log(output: str) -> list[Commit]:
    """Parse the records of ``LOG_FORMAT``, newest first as git printed them."""
    commits: list[Commit] = []
    for record in output.split(RECORD):
        fields = record.strip("\n").split(FIELD, 6)
        if len(fields) != 7:
            continue
        sha, short, timestamp, date, author, subject, body = fields
        commits.append(
            Commit(
                sha=sha,
                short=short,
                committed=datetime.fromtimestamp(int(timestamp), UTC),
                date=date,
                author=author,
                subject=subject,
                body=body,
            )
        )
    return commits
