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
    listed = hz(world.home, "heinzel", "list")
    assert "HZS100" not in listed.stderr, "the writer's warning went with the accepted break"
    verified = hz(world.home, "heinzel", "verify", "notes-digest")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    log = (world.home / "daemon.log").read_text()
    assert log.count("HZS100") == 1, log  # found once, never retried in a loop
    assert "Traceback" not in log
    assert hz(world.home, "daemon", "stop").returncode == 0


async def test_a_turn_a_cut_tail_left_open_resumes_once_the_cut_is_accepted(
    tmp_path: Path, daemons: Daemons
) -> None:
    """Attack pass: a tail cut under the daemon took a turn's ending with it; after
    ``verify --accept`` the turn showed running, with nothing running it, until the next
    wake. The daemon now resumes the open turn at once."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    home = Home.resolve(world.home)
    daemons.start(home, env={"HZ_TICK_SECONDS": "0.5"})
    assert hz(world.home, "heinzel", "wake", "notes-digest").returncode == 0
    _until(lambda: _ended(world, heinzel_id, 2), "turn 2")
    spine = world.home / "heinzel" / heinzel_id / "session.jsonl"
    lines = spine.read_bytes().splitlines(keepends=True)
    (finished,) = [n for n, line in enumerate(lines) if b'"turn.finished"' in line][-1:]
    spine.write_bytes(b"".join(lines[:finished]))  # the last turn's ending cut away
    assert not _ended(world, heinzel_id, 2)

    accepted = hz(world.home, "heinzel", "verify", "notes-digest", "--accept")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    _until(lambda: _ended(world, heinzel_id, 2), "the open turn resumed and ended, unwoken")
    resumed = [e for e in _spine(world, heinzel_id) if e["kind"] == "turn.resumed"]
    assert [e["data"]["woken_by"] for e in resumed] == ["restart"]  # type: ignore[index]
    assert hz(world.home, "daemon", "stop").returncode == 0
