"""Issue 13 item 1: no path leaves the CLI locked out by a process that holds a heinzel.

This test's process plays the ``hz --embedded`` cockpit: a long-lived kernel
holding ``kernel.lock``, running a slow turn (``HZ_MODEL_DELAY_MS``). The
real ``hz`` binary, run as a user runs it (no ``HZ_EMBEDDED``), starts no
daemon beside it; ``stop`` and ``pause`` on the held heinzel exit 0 as
queued commands, and the holder's next tick carries each out exactly once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hz_kernel.daemon.discovery import KernelLock
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.env import hz_env
from tests.tui import homes, worlds

HZ = [sys.executable, "-m", "hz_kernel.cli"]


def hz(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    env = hz_env(home.root, embedded=False, HZ_NOW=homes.NOW, HZ_TICK_SECONDS="3600")
    return subprocess.run([*HZ, *args], capture_output=True, text=True, env=env, timeout=60)


def kinds(home: Home, heinzel_id: str) -> list[str]:
    path = home.heinzel_dir(heinzel_id) / "session.jsonl"
    return [orjson.loads(line)["kind"] for line in path.read_bytes().splitlines()]


async def test_issue13_item1_stop_and_pause_on_a_held_heinzel_are_queued_and_done_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", homes.NOW)
    world = worlds.make_world(tmp_path)
    world.add_note("wednesday.md", "# Wednesday\n" + "".join(f"- item {n}\n" for n in range(14)))
    home = world.home
    kernel = await Kernel.open(home)
    try:
        heinzel = await worlds.add_heinzel(kernel, world, "notes-digest", wake=False)
    finally:
        await kernel.close()
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "3000")  # the turn outlasts the commands below
    lock = KernelLock(home).acquire()
    kernel = await Kernel.open(home, long_lived=True)
    try:
        await kernel.wake(ref="notes-digest")
        while kernel.running_count() == 0:
            await asyncio.sleep(0.01)

        stopped = await asyncio.to_thread(hz, home, "heinzel", "stop", "notes-digest")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stderr == ""
        assert stopped.stdout.startswith("notes-digest: stop queued as request ")
        assert f"process {os.getpid()} holds this heinzel" in stopped.stdout
        paused = await asyncio.to_thread(hz, home, "heinzel", "pause", "notes-digest", "--json")
        assert paused.returncode == 0, paused.stderr
        queued = orjson.loads(paused.stdout)
        assert (queued["status"], queued["operation"]) == ("queued", "heinzel.pause")
        assert not home.discovery_path.exists(), "a daemon was started beside the holder"
        assert "heinzel.paused" not in kinds(home, heinzel)

        report = await kernel.tick_once()
        assert report.problems == []
        assert kernel.running_count() == 0
        await kernel.tick_once()
        events = kinds(home, heinzel)
        assert events.count("heinzel.paused") == 1 and events.count("turn.finished") == 1
        inbox = home.heinzel_dir(heinzel) / "inbox"
        assert queued["request_id"] + ".json" not in os.listdir(inbox)
    finally:
        await kernel.close()
        lock.release()
    shown = hz(home, "heinzel", "show", "notes-digest", "--json")
    detail = orjson.loads(shown.stdout)
    assert detail["heinzel"]["state"] == "paused"
    assert detail["turns"][-1]["disposition"] == "abandoned"
