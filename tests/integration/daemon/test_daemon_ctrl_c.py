"""Ctrl-C ends every ``hz`` command with one coded line and exit 130, wherever its kernel runs.

Each test starts the real ``hz`` in a process group of its own and sends a
real SIGINT to the whole group, as a terminal's Ctrl-C does, once the
command has reached the point under test (read from its output, its spine
or its open files, never guessed from a time): waiting on the daemon, in
the middle of an embedded turn, opening an index another process holds.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from daemon_helpers import Daemons

from tests.support.env import hz_env
from tests.support.faults import MADE_AT, hourly_digest
from tests.support.homes import World, make_world, start_in_own_group


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _start(world: World, *args: str, **env: str) -> subprocess.Popen[str]:
    return start_in_own_group(world.home, *args, env=hz_env(world.home, HZ_NOW=MADE_AT) | env)


def _interrupt(world: World, proc: subprocess.Popen[str], ready: Callable[[], bool]) -> str:
    """SIGINT to ``proc``'s group once ``ready``; its one line on stderr, after exit 130."""
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, (world.root / "err.txt").read_text()
        assert time.monotonic() < deadline, "the command never got ready"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    err = (world.root / "err.txt").read_text()
    assert "Traceback" not in err and "Event loop is closed" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _said(world: World) -> str:
    return (world.root / "out.txt").read_text()


def test_ctrl_c_while_the_daemon_answers_says_so_and_leaves_it_running(
    world: World, daemons: Daemons
) -> None:
    """``hz heinzel tail`` waits on the daemon for the next turn: Ctrl-C there is HZD139."""
    hourly_digest(world, "digest")
    started = world.hz("daemon", "start", "--json", HZ_NOW=MADE_AT, HZ_TICK_SECONDS="3600")
    daemons.track(json.loads(started.stdout)["pid"])
    try:
        tail = _start(world, "heinzel", "tail", "digest")
        line = _interrupt(world, tail, lambda: "waiting for the next" in _said(world))
        assert line.startswith("HZD139: interrupted (Ctrl-C) while waiting for the daemon"), line
        assert "change" not in line, "a tail asked for no change, and the line claims none"
        assert world.hz("daemon", "status").returncode == 0
    finally:
        world.hz("daemon", "stop", check=False)


def test_ctrl_c_in_an_embedded_turn_says_so_and_the_spine_stays_whole(world: World) -> None:
    """A turn run in the command's own kernel, held mid-think: Ctrl-C is HZU247, and the
    spine it was writing still verifies."""
    heinzel = hourly_digest(world, "digest")
    hold = world.root / "hold"
    hold.touch()
    wake = _start(world, "heinzel", "wake", "digest", HZ_MODEL_HOLD_FILE=str(hold))
    line = _interrupt(world, wake, lambda: "turn.started" in world.kinds(heinzel))
    assert line.startswith("HZU247: interrupted (Ctrl-C)"), line
    assert world.hz("heinzel", "verify", "digest", HZ_NOW=MADE_AT).returncode == 0


@pytest.fixture
def index_held(world: World) -> Iterator[Path]:
    """The home's index locked by this process, as a writer holding it would: a reader
    opening it waits in aiosqlite's thread (its busy timeout) until Ctrl-C."""
    hourly_digest(world, "digest")
    index = world.home / "heinzel" / "index.sqlite"
    conn = sqlite3.connect(index, isolation_level=None)
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("UPDATE heinzels SET name = name WHERE 0")
        yield index
    finally:
        conn.close()


def test_ctrl_c_while_the_index_opens_leaves_no_thread_behind(
    world: World, index_held: Path
) -> None:
    """Ctrl-C while a listing opens the index: one line, and none of aiosqlite's "Event loop
    is closed" tracebacks from a thread left answering a loop that had ended."""
    listing = _start(world, "heinzel", "list", "--json")
    fds = Path(f"/proc/{listing.pid}/fd")

    def opened() -> bool:
        try:
            return any(os.readlink(fd) == str(index_held) for fd in fds.iterdir())
        except OSError:
            return False

    line = _interrupt(world, listing, opened)
    assert line.startswith("HZU247: interrupted (Ctrl-C)"), line
