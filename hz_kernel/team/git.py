"""The one place hz runs git for a team repository.

Every call has a timeout, never prompts (``GIT_TERMINAL_PROMPT=0``, ssh in
batch mode, no terminal on stdin) and
commits under a fixed identity, so no user's name or address ever reaches
the team repository through hz. A failure is a coded one-line error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from hz_kernel.errors import HzError

#: The identity of every commit hz writes: never the user's.
IDENTITY_NAME = "hz"
IDENTITY_EMAIL = "hz@localhost"
#: A git call that takes longer than this is stopped (a hung remote must not hold a tick).
TIMEOUT_SECONDS = 60.0
GIT_FAILED = "HZS105"
#: Variables that would point git at another repository or identity (hz run from a git hook).
_REPOSITORY_VARIABLES = (
    "GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX", "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH",
)  # fmt: skip


class GitFailed(HzError):
    """A git command exited non-zero, could not start, or timed out."""

    def __init__(self, args: Sequence[str], detail: str, stderr: str = "") -> None:
        super().__init__(GIT_FAILED, detail, f"git {args[0]}" if args else "git")
        self.stderr = stderr


def _env(moment: datetime | None, index: Path | None) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(_REPOSITORY_VARIABLES)
    }
    if "GIT_SSH" not in env and "GIT_SSH_COMMAND" not in env:
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="true",
        LC_ALL="C",
        GIT_AUTHOR_NAME=IDENTITY_NAME,
        GIT_AUTHOR_EMAIL=IDENTITY_EMAIL,
        GIT_COMMITTER_NAME=IDENTITY_NAME,
        GIT_COMMITTER_EMAIL=IDENTITY_EMAIL,
    )
    if moment is not None:
        date = f"{int(moment.astimezone(UTC).timestamp())} +0000"
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


def git(
    git_dir: Path,
    *args: str,
    stdin: bytes | None = None,
    moment: datetime | None = None,
    index: Path | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git --git-dir=<git_dir> <args>``; ``moment`` dates a commit (same input, same id),
    ``index`` names a private index file (plumbing that builds a tree).

    With ``check`` a non-zero exit raises ``GitFailed`` naming git's first
    line of complaint; without it the caller reads ``returncode`` itself. Git
    runs in a session of its own, so a timeout (``TIMEOUT_SECONDS``, read at
    each call) stops its whole process group: an ``ssh`` it started
    must not outlive it and keep the remote's connection open.
    """
    command = ["git", f"--git-dir={git_dir}", *args]
    limit = TIMEOUT_SECONDS
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(moment, index),
            start_new_session=True,
        )
    except OSError as exc:
        raise GitFailed(args, f"cannot run git ({exc.strerror})") from None
    try:
        out, err = process.communicate(stdin, timeout=limit)
    except subprocess.TimeoutExpired:
        _stop(process)
        raise GitFailed(args, f"no answer within {limit:g}s") from None
    except BaseException:
        _stop(process)
        raise
    done = subprocess.CompletedProcess(command, process.returncode, out, err)
    if check and done.returncode != 0:
        raise GitFailed(args, complaint(done.stderr), done.stderr.decode(errors="replace"))
    return done


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill git's whole process group (an ``ssh`` it started too) and reap git."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
    process.wait()


def complaint(stderr: bytes) -> str:
    """git's most telling line: the first ``fatal:``/``error:`` line, else the last one."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else "no message"
