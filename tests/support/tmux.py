"""The real ``hz`` binary in a real terminal: a private tmux server and the cockpit in it.

tmux runs on a socket of its own (``tmux -L``), so no user session is
touched; the ``tmux`` fixture kills that server at teardown. A test builds
the environment with ``daemon_env``, then either starts a daemon and the
cockpit on it with ``daemon_cockpit`` (the daemon is stopped after, even
on failure) or starts a command line of its own with ``Tmux.start``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.support.env import hz_env

HZ = Path(sys.executable).parent / "hz"
#: How long a tmux test waits for the screen to show something before failing: only a guard
#: against a hang, as a loaded CI machine (or the shifted-clock pass) takes many seconds.
WAIT_S = 60.0


class Tmux:
    """One detached tmux session on a private server socket."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def start(self, command: str, *, width: int = 120) -> None:
        """Run ``command`` in a new detached session ``width`` columns by 40 lines."""
        self.run("new-session", "-d", "-s", self.session, "-x", str(width), "-y", "40", command)

    def keys(self, *keys: str) -> None:
        """Send keys one at a time, apart: Escape then a letter quickly would read as Alt."""
        for key in keys:
            self.run("send-keys", "-t", self.session, key)
            time.sleep(0.3)

    def type_text(self, text: str) -> None:
        """Send ``text`` literally, in one go (no key names)."""
        self.run("send-keys", "-t", self.session, "-l", text)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def wait_for(self, check: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT_S
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{shown}")
            time.sleep(0.1)

    def assert_exits(self, message: str, *, within: float = WAIT_S) -> None:
        """Assert that the session (the cockpit in it) ends within ``within`` seconds."""
        deadline = time.monotonic() + within
        while self.run("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not self.run("list-sessions"), message


def hz(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HZ), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    name = f"hz-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    session = Tmux(name, name)
    try:
        yield session
    finally:
        session.run("kill-server")


def daemon_env(root: Path, **knobs: str) -> dict[str, str]:
    """The environment of a daemon-by-default ``hz`` on ``root`` in an xterm: no tick for an
    hour (the test drives the turns), no pydantic-ai banner, then ``knobs``."""
    return hz_env(
        root,
        embedded=False,
        HZ_TICK_SECONDS="3600",
        PYDANTIC_AI_NO_BANNER="1",
        TERM="xterm-256color",
        **knobs,
    )


def cockpit_command(
    env: Mapping[str, str], *args: str, exported: tuple[str, ...] = ("HZ_", "PYDANTIC")
) -> str:
    """The ``hz`` cockpit's command line for tmux, with the variables of ``env`` whose names
    start with one of ``exported`` (the tmux server has an environment of its own)."""
    knobs = [f"{k}={v}" for k, v in env.items() if k.startswith(exported)]
    return " ".join([*knobs, str(HZ), *args])


def remote_cockpit_command(
    laptop_env: Mapping[str, str], url: str, token_file: Path, *, prefix: Sequence[str] = ()
) -> str:
    """``hz --connect url`` under ``env -i``: of this machine's environment only ``PATH``
    and ``laptop_env`` reach it, as on a laptop that has no home of the daemon's."""
    return " ".join(
        [
            "env",
            "-i",
            f"PATH={os.environ['PATH']}",
            *(f"{k}={v}" for k, v in laptop_env.items()),
            *prefix,
            str(HZ),
            "--connect",
            url,
            "--token-file",
            str(token_file),
        ]
    )


@contextlib.contextmanager
def daemon_cockpit(
    tmux: Tmux, env: dict[str, str], ready: Callable[[str], bool], what: str = "the home table"
) -> Iterator[str]:
    """``hz daemon start``, then the cockpit on it in tmux; yields the screen once ``ready``
    holds. The daemon is stopped with ``hz daemon stop`` after, even when the body failed."""
    started = hz(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        tmux.start(cockpit_command(env))
        yield tmux.wait_for(ready, what)
    finally:
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
