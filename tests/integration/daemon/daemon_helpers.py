"""Real daemons on throwaway homes: the CLI as a subprocess, homes with real spines."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ulid import ULID

from hz_kernel.daemon.protocol import Discovery
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import HeinzelCreated

HZ = [sys.executable, "-m", "hz_kernel.cli"]


def hz(
    home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HZ_HOME": str(home), **(env or {})}
    return subprocess.run(
        [*HZ, *args], capture_output=True, text=True, env=full_env, timeout=timeout
    )


def one_coded_line(result: subprocess.CompletedProcess[str], code: str) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{code}: "), lines[0]
    return lines[0]


def make_home(root: Path, *, heinzels: int = 3, daemon: dict[str, Any] | None = None) -> Home:
    """A home with ``heinzels`` real spines (named h0, h1, …) and an optional ``[daemon]``."""
    root.mkdir(parents=True, mode=0o700)
    if daemon:
        lines = ["[daemon]"]
        for key, value in daemon.items():
            lines.append(f"{key} = {json.dumps(value)}")
        (root / "hz.toml").write_text("\n".join(lines) + "\n")
    for index in range(heinzels):
        with SpineWriter.open(root / "heinzel" / f"hz-{ULID()}") as writer:
            writer.append(HeinzelCreated(name=f"h{index}"))
    return Home.resolve(root)


def discovery(home: Home) -> Discovery:
    return Discovery.model_validate_json(home.discovery_path.read_bytes())


async def ticks_pass(home: Home, count: int, timeout: float = 60) -> None:
    """Return once the daemon of ``home`` has finished ``count`` more ticks: a test that
    proves nothing happens on a tick waits for the ticks themselves, not for a guessed time."""
    async with HttpClient(discovery(home)) as client:
        target = (await client.health()).ticks + count
        deadline = time.monotonic() + timeout
        while (await client.health()).ticks < target:
            assert time.monotonic() < deadline, f"{count} ticks did not pass within {timeout}s"
            await asyncio.sleep(0.05)


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie (an orphaned daemon may linger as one until reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def daemon_pids(home: Path) -> list[int]:
    """Every process serving ``home`` in the foreground (read from /proc, no guessing)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--foreground" in argv and str(home).encode() in argv:
            pids.append(int(entry.name))
    return pids


class Daemons:
    """Starts daemons through the real CLI and kills, at teardown, every one it saw."""

    def __init__(self) -> None:
        self.pids: set[int] = set()

    def start(self, home: Home, env: dict[str, str] | None = None) -> dict[str, Any]:
        result = hz(home.root, "daemon", "start", "--json", env=env)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        self.pids.add(report["pid"])
        return report

    def track(self, pid: int) -> None:
        self.pids.add(pid)

    def kill_all(self) -> None:
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
