"""``git:read``: ``git log``, ``git show`` and ``git diff`` on a repository an input names.

The real ``git`` runs with hooks, pagers, external diff drivers and the
system config off (as the ``git`` source does). A revision must look like
one (no leading ``-``, no ``..``, nothing but ref characters) and comes after
``--end-of-options``; a path must stay inside the repository and comes after
``--``, so no argument can be taken for an option.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from pathlib import Path

from pydantic import Field

from hz_kernel.adapters.sources.base import OUTPUT_CAP_BYTES, cap_text
from hz_kernel.adapters.sources.git import GIT_TIMEOUT_SECONDS, SAFE_OPTIONS, git_env
from hz_kernel.engine.tools.base import (
    BAD_ARGUMENTS,
    NOT_READABLE,
    OUTSIDE_ROOTS,
    ToolArgs,
    ToolRegistry,
    ToolSpec,
    refused,
)
from hz_kernel.engine.tools.grant import Grant

_REV = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/@{}~^-]{0,199}")


class GitLogArgs(ToolArgs):
    repo: str = Field(description="a repository your inputs name")
    rev: str = Field(default="HEAD", description="a branch, tag or commit")
    limit: int = Field(default=20, ge=1, le=200)
    path: str | None = Field(default=None, description="only commits touching this path")


class GitShowArgs(ToolArgs):
    repo: str = Field(description="a repository your inputs name")
    rev: str = Field(description="the commit to show")
    path: str | None = Field(default=None, description="only this path's part of the commit")


class GitDiffArgs(ToolArgs):
    repo: str = Field(description="a repository your inputs name")
    base: str = Field(description="the older revision")
    head: str = Field(default="HEAD", description="the newer revision")
    path: str | None = Field(default=None, description="only this path's changes")


def _rev(value: str) -> str:
    if not _REV.fullmatch(value) or ".." in value:
        raise refused(BAD_ARGUMENTS, "not a revision (a branch, tag or commit)", value[:200])
    return value


def _paths(value: str | None) -> list[str]:
    """``--`` and the path, when one is given and stays inside the repository."""
    if value is None:
        return ["--"]
    tidy = posixpath.normpath(value)
    if not value or "\0" in value or tidy.startswith(("/", "../")) or tidy == "..":
        raise refused(OUTSIDE_ROOTS, "a path inside the repository, relative to its top", value)
    return ["--", tidy]


def run_git(repo: Path, args: list[str], place: str) -> str:
    """Run one git read in ``repo``; its output, cut at 1 MiB, or a coded failure."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *SAFE_OPTIONS, *args],
            capture_output=True,
            env=git_env(),
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise refused(NOT_READABLE, "the git program is not installed", place) from None
    except subprocess.TimeoutExpired:
        raise refused(
            NOT_READABLE, f"git took longer than {GIT_TIMEOUT_SECONDS:g} s", place
        ) from None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace")
        first = next((line for line in stderr.splitlines() if line.strip()), "git failed")
        raise refused(NOT_READABLE, first.strip()[:300], place)
    return cap_text(done.stdout, OUTPUT_CAP_BYTES)[1]


_QUIET = ["--no-color", "--no-ext-diff", "--no-textconv"]
#: A repository's ``log.showSignature`` would run the program its ``gpg.program`` names.
_NO_SIGNATURES = "--no-show-signature"


def git_log(args: ToolArgs, grant: Grant) -> str:
    assert isinstance(args, GitLogArgs)
    repo = grant.repo(args.repo)
    command = ["log", "--format=%H %cs %an: %s", f"--max-count={args.limit}", "--no-color"]
    command.append(_NO_SIGNATURES)
    return (
        run_git(repo, [*command, "--end-of-options", _rev(args.rev), *_paths(args.path)], args.repo)
        or "no commits"
    )


def git_show(args: ToolArgs, grant: Grant) -> str:
    assert isinstance(args, GitShowArgs)
    repo = grant.repo(args.repo)
    command = ["show", "--format=fuller", "--stat", "--patch", *_QUIET, _NO_SIGNATURES]
    command.append("--end-of-options")
    return run_git(repo, [*command, _rev(args.rev), *_paths(args.path)], args.repo)


def git_diff(args: ToolArgs, grant: Grant) -> str:
    assert isinstance(args, GitDiffArgs)
    repo = grant.repo(args.repo)
    command = ["diff", "--stat", "--patch", *_QUIET, "--end-of-options"]
    revs = [_rev(args.base), _rev(args.head)]
    return run_git(repo, [*command, *revs, *_paths(args.path)], args.repo) or "no difference"


def register(registry: ToolRegistry) -> None:
    for name, args, run, description in (
        (
            "git_log",
            GitLogArgs,
            git_log,
            "List commits (sha, date, author: subject), newest first.",
        ),
        ("git_show", GitShowArgs, git_show, "Show one commit: its message, files and patch."),
        ("git_diff", GitDiffArgs, git_diff, "Show what changed between two revisions."),
    ):
        registry.register(
            ToolSpec(name=name, capability="git:read", description=description, args=args, run=run)
        )
