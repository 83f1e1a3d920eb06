"""The ``shell`` source: a command's standard output as one facet.

The contract author declares the command a read, which is why the source
counts as replay-safe: a resumed turn may run it again. The command runs in
its own process group so a timeout stops everything it started, and output
beyond the cap is hashed and dropped rather than held in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import selectors
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.adapters.sources.base import (
    OUTPUT_CAP_BYTES,
    FetchResult,
    SourceRequest,
    cap_text,
    resolve_path,
)
from hz_kernel.errors import HzError

STDERR_KEEP_BYTES = 64 * 1024


class RunArgs(BaseModel):
    """``command`` runs under ``/bin/sh -c`` in ``cwd`` (default ``base_dir``)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    command: str = Field(min_length=1)
    cwd: str | None = None
    timeout: float = Field(default=10.0, gt=0, le=600)


class Finished(BaseModel):
    """What a command left behind: exit status and (capped) output."""

    model_config = ConfigDict(defer_build=True)

    returncode: int
    stdout: bytes
    stdout_size: int
    stdout_sha256: str
    stderr: bytes


class ShellSource:
    """Runs a declared read-only command and fingerprints its output."""

    kind = "shell"
    methods = frozenset({"run"})
    replay_safe = True

    def __init__(self, base_dir: Path | None = None) -> None:
        self.base_dir = base_dir

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None = None
    ) -> FetchResult:
        args = request.parse_args(RunArgs)
        cwd = resolve_path(args.cwd if args.cwd is not None else ".", self.base_dir)
        place = request.describe()
        if not cwd.is_dir():
            raise HzError("HZT042", f"the working directory {cwd} does not exist", place)
        finished = run_capped(args.command, cwd=cwd, timeout=args.timeout, place=place)
        if finished.returncode != 0:
            first = next(
                (
                    line.strip()
                    for line in finished.stderr.decode("utf-8", errors="replace").splitlines()
                    if line.strip()
                ),
                "no error output",
            )
            raise HzError(
                "HZT040", f"the command exited with {finished.returncode}: {first}", place
            )
        _, text = cap_text(finished.stdout)
        if finished.stdout_size > OUTPUT_CAP_BYTES:
            text += f"[hz: {finished.stdout_size} bytes in all]\n"
        return FetchResult(
            request=request,
            facets={"stdout": finished.stdout_sha256},
            content={"stdout": text},
            as_of=now,
        )


def run_capped(command: str, *, cwd: Path, timeout: float, place: str) -> Finished:
    """Run ``command`` to completion or until ``timeout``, keeping at most the cap of stdout."""
    try:
        process = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise HzError("HZT042", f"the command could not start: {exc.strerror}", place) from None
    assert process.stdout is not None and process.stderr is not None  # pipes, by construction
    stdout_fd, stderr_fd = process.stdout.fileno(), process.stderr.fileno()
    kept = {stdout_fd: bytearray(), stderr_fd: bytearray()}
    limits = {stdout_fd: OUTPUT_CAP_BYTES + 1, stderr_fd: STDERR_KEEP_BYTES}
    stdout_size = 0
    stdout_digest = hashlib.sha256()
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as selector:
            for fd in kept:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired(command, timeout)
                for key, _ in selector.select(remaining):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        selector.unregister(key.fd)
                        continue
                    if key.fd == stdout_fd:
                        stdout_size += len(chunk)
                        stdout_digest.update(chunk)
                    room = limits[key.fd] - len(kept[key.fd])
                    kept[key.fd].extend(chunk[: max(room, 0)])
        returncode = process.wait(max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise HzError("HZT041", f"the command ran longer than {timeout:g} s", place) from None
    finally:
        process.stdout.close()
        process.stderr.close()
    return Finished(
        returncode=returncode,
        stdout=bytes(kept[stdout_fd]),
        stdout_size=stdout_size,
        stdout_sha256=stdout_digest.hexdigest(),
        stderr=bytes(kept[stderr_fd]),
    )
