"""Session 11: a wake the daemon admitted and queued for capacity survives the daemon's death.

The CLI said the wake was taken; its request sits in the heinzel's inbox
while the turn waits for a slot. A daemon SIGKILLed then must leave it to
be delivered by the next one, exactly once. Real processes: the daemon, the
CLI, the offline local model held by ``HZ_MODEL_HOLD_FILE`` so the queue is
a state the test waits for.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from daemon_helpers import Daemons, hz, ticks_pass

from hz_kernel.contracts import render_template
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, make_world

WAIT_S = 120


async def _heinzels(world: World, names: list[str]) -> dict[str, str]:
    """Approved digests that have drafted once (the tick finds nothing new for them)."""
    kernel = await Kernel.open(Home.resolve(world.home))
    made: dict[str, str] = {}
    try:
        for name in names:
            text = render_template(
                "digest",
                {"name": name, "notes": "notes", "document": f"reports/{name}.md",
                 "section": name, "schedule": "", "model": "local"},
            )  # fmt: skip
            new = await kernel.new(text=text)
            await kernel.approve(ref=new.id)
            await kernel.wake(ref=new.id)
            made[name] = new.id
    finally:
        await kernel.close()
    return made


def _status(world: World) -> dict[str, Any]:
    result = hz(world.home, "daemon", "status", "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def _ours(world: World, heinzel_id: str, request_id: str) -> list[str]:
    """The kinds of the events of the turns that took ``request_id``."""
    spine = world.spine(heinzel_id)
    turns = {
        e["turn"]
        for e in spine
        if e["kind"] == "turn.started" and request_id in e["data"]["request_ids"]  # type: ignore[operator]
    }
    return [str(e["kind"]) for e in spine if e["turn"] in turns]


async def test_s11_a_wake_queued_for_capacity_runs_once_after_the_daemon_is_killed(
    tmp_path: Path, daemons: Daemons
) -> None:
    world = make_world(tmp_path)
    with (world.home / "hz.toml").open("a") as toml:
        toml.write("[daemon]\nmax_concurrent_turns = 1\nmin_free_memory_mb = 0\n")
    ids = await _heinzels(world, ["first", "second"])
    home = Home.resolve(world.home)
    hold = tmp_path / "hold"
    hold.touch()
    started = daemons.start(home, env={"HZ_MODEL_HOLD_FILE": str(hold)})
    for name in ids:
        woke = hz(world.home, "heinzel", "wake", name, "--request-id", f"crash-{name}")
        assert woke.returncode == 0, woke.stderr
    deadline = time.monotonic() + WAIT_S
    while [t["queued"] for t in _status(world)["turns"]] != [None, "capacity"]:
        assert time.monotonic() < deadline, _status(world)["turns"]
        time.sleep(0.1)

    os.kill(started["pid"], signal.SIGKILL)
    hold.unlink()
    daemons.start(home, env={"HZ_TICK_SECONDS": "1"})
    await ticks_pass(home, 2)
    deadline = time.monotonic() + WAIT_S
    while _status(world)["turns_running"] or _status(world)["turns_queued"]:
        assert time.monotonic() < deadline, _status(world)
        time.sleep(0.1)

    for name, heinzel_id in ids.items():
        kinds = _ours(world, heinzel_id, f"crash-{name}")
        assert kinds.count("turn.started") == 1, (name, kinds)
        assert kinds.count("turn.finished") == 1, (name, kinds)
        assert kinds.count("draft.placed") == 1, (name, kinds)
    verified = hz(world.home, "heinzel", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
