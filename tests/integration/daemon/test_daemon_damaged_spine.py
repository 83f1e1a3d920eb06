"""s9 item 3 (attack): a spine damaged under a running daemon, put right without a restart.

A byte cut from the middle of a spine the daemon holds left its writer refusing every
line (HZS100), ``hz heinzel verify NAME --accept`` failing the same way, and only a
restart as the way out. Through the real ``hz`` binary and a real daemon process.
"""

from __future__ import annotations

import json
from pathlib import Path

from daemon_helpers import Daemons, hz, ticks_pass
from test_daemon_attack_kernel import _ended, _heinzel, _spine, _until

from hz_kernel.home import Home
from tests.support.homes import World, make_world


def _took(world: World, heinzel_id: str, request_id: str) -> bool:
    """Whether a turn that took up ``request_id`` has ended."""
    events = _spine(world, heinzel_id)
    started = {
        str(e["turn"])
        for e in events
        if e["kind"] == "turn.started" and request_id in (e["data"].get("request_ids") or [])  # type: ignore[union-attr]
    }
    return any(e["kind"] == "turn.finished" and e["turn"] in started for e in events)


def _damaged(world_home: Path) -> bool:
    listed = json.loads(hz(world_home, "heinzel", "list", "--json").stdout)
    return bool(listed[0]["damaged"])


async def test_s9_item3_a_spine_cut_under_the_daemon_is_accepted_through_it_and_runs_again(
    tmp_path: Path, daemons: Daemons
) -> None:
    """The daemon marks the heinzel damaged when its writer finds the spine cut, keeps the
    wake it had admitted (ticks pass, it is not retried), accepts the damage when the CLI
    asks it to, and then delivers the kept wake itself."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    home = Home.resolve(world.home)
    daemons.start(home, env={"HZ_TICK_SECONDS": "0.5"})
    first = hz(world.home, "heinzel", "wake", "notes-digest")  # the daemon now holds the spine
    assert first.returncode == 0, first.stderr
    _until(lambda: _ended(world, heinzel_id, 2), "turn 2")
    spine = world.home / "heinzel" / heinzel_id / "session.jsonl"
    raw = bytearray(spine.read_bytes())
    middle = len(raw) // 2
    while not chr(raw[middle]).isalpha():
        middle += 1
    del raw[middle]  # one byte gone from the middle: a hand edit gone wrong
    spine.write_bytes(bytes(raw))

    woke = hz(world.home, "heinzel", "wake", "notes-digest", "--request-id", "kept-1")
    assert woke.returncode == 0, woke.stderr  # admitted before the daemon knew
    _until(lambda: _damaged(world.home), "the heinzel listed as damaged")
    await ticks_pass(home, 3)
    assert not _took(world, heinzel_id, "kept-1")
    inbox = world.home / "heinzel" / heinzel_id / "inbox"
    assert (inbox / "kept-1.json").exists(), "the admitted wake is kept"

    accepted = hz(world.home, "heinzel", "verify", "notes-digest", "--accept")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "break accepted now" in accepted.stdout
    _until(lambda: _took(world, heinzel_id, "kept-1"), "the kept wake delivered")
    assert not _damaged(world.home)
    verified = hz(world.home, "heinzel", "verify", "notes-digest")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    log = (world.home / "daemon.log").read_text()
    assert log.count("HZS100") == 1, log  # found once, never retried in a loop
    assert "Traceback" not in log
    assert hz(world.home, "daemon", "stop").returncode == 0
