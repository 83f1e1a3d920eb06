"""Turns run in the daemon: they outlive their caller and survive the daemon being killed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import orjson
import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.integration.daemon.daemon_helpers import Daemons, hz, pid_alive, ticks_pass
from tests.support.homes import World, digest_contract, make_world

WAIT_S = 60


def _spine(world: World, heinzel_id: str) -> list[dict[str, object]]:
    path = world.home / "heinzel" / heinzel_id / "session.jsonl"
    lines = path.read_bytes().splitlines() if path.exists() else []
    return [orjson.loads(line) for line in lines if line.endswith(b"}")]


def _wait(world: World, heinzel_id: str, kind: str, count: int = 1) -> list[dict[str, object]]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        spine = _spine(world, heinzel_id)
        if sum(1 for e in spine if e["kind"] == kind) >= count:
            return spine
        time.sleep(0.1)
    raise AssertionError(
        f"no {kind} within {WAIT_S}s: {[e['kind'] for e in _spine(world, heinzel_id)]}"
    )


def _wake_finished(spine: list[dict[str, object]], request_id: str) -> bool:
    """Whether the turn that took the wake ``request_id`` has finished."""
    turns = {
        e["turn"]
        for e in spine
        if e["kind"] == "turn.started" and request_id in e["data"]["request_ids"]
    }
    return any(e["kind"] == "turn.finished" and e["turn"] in turns for e in spine)


async def _heinzel(world: World, *, first_turn: bool = False) -> str:
    """An approved heinzel; with ``first_turn`` it has drafted once, so no input looks new."""
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    if first_turn:
        await kernel.wake(ref=made.id)
    await kernel.close()
    return made.id


async def test_a_wake_returns_at_once_and_the_turn_completes_in_the_daemon(
    tmp_path: Path, daemons: Daemons
) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    daemons.start(Home.resolve(world.home), env={"HZ_MODEL_DELAY_MS": "30"})
    started = time.monotonic()
    woke = hz(world.home, "heinzel", "wake", "notes-digest", "--request-id", "w1", "--json")
    returned_after = time.monotonic() - started
    assert woke.returncode == 0, woke.stderr
    # "requested": the daemon's first tick had begun the new heinzel's first turn, and the
    # wake waits behind it.
    assert json.loads(woke.stdout)["status"] in ("started", "finished", "requested")
    spine = _wait(world, heinzel_id, "turn.finished")
    finished = [e for e in spine if e["kind"] == "turn.finished"]
    assert finished[0]["data"]["disposition"] == "drafted"
    deadline = time.monotonic() + WAIT_S
    while not _wake_finished(spine, "w1") and time.monotonic() < deadline:
        time.sleep(0.1)
        spine = _spine(world, heinzel_id)
    assert _wake_finished(spine, "w1"), [e["kind"] for e in spine]
    assert returned_after < 30
    assert (world.reports / "digest.md").read_text().count("<!-- hz:begin ") == 1


@pytest.mark.parametrize("point", ["step.done:think", "effect:before-done"])
async def test_daemon_killed_mid_step_or_mid_effect_settles_on_restart(
    tmp_path: Path, daemons: Daemons, point: str
) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world, first_turn=True)
    first = daemons.start(Home.resolve(world.home), env={"HZ_CRASH_AT": point})
    sent = hz(world.home, "heinzel", "chat", "notes-digest", "mention the launch",
              "--request-id", "m1", "--json")  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    deadline = time.monotonic() + WAIT_S
    while pid_alive(first["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(first["pid"]), "the daemon should have killed itself at the crash point"
    assert [e["kind"] for e in _spine(world, heinzel_id)].count("turn.finished") == 1

    daemons.start(Home.resolve(world.home), env={"HZ_TICK_SECONDS": "0.2"})
    spine = _wait(world, heinzel_id, "turn.finished", count=2)
    chat_turn = next(
        e["turn"]
        for e in spine
        if e["kind"] == "turn.started" and e["data"]["request_ids"] == ["m1"]
    )
    mine = [e for e in spine if e["turn"] == chat_turn]
    kinds = [e["kind"] for e in mine]
    assert kinds.count("turn.started") == 1 and kinds.count("turn.finished") == 1
    assert kinds.count("effect.started") == 1 and kinds.count("draft.placed") == 1
    assert [e["data"]["step"] for e in mine if e["kind"] == "step.done"].count("think") == 1
    assert next(e for e in mine if e["kind"] == "turn.resumed")["data"]["woken_by"] == "restart"
    carrying = [
        e for e in spine if e["kind"] == "turn.started" and "m1" in e["data"]["request_ids"]
    ]
    assert len(carrying) == 1
    assert (world.reports / "digest.md").read_text().count("<!-- hz:begin ") == 1
    again = hz(world.home, "heinzel", "chat", "notes-digest", "mention the launch",
               "--request-id", "m1", "--json")  # fmt: skip
    assert again.returncode == 0
    await ticks_pass(Home.resolve(world.home), 2)  # the ticks that would deliver it again
    assert [e["kind"] for e in _spine(world, heinzel_id)].count("turn.started") == 2


async def test_issue12_items3_4_reject_by_name_with_a_reason_over_the_wire(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hz reject NAME --reason`` reaches the daemon (``RejectRequest``): the one waiting
    draft goes, and the only lesson is the reason's, never one from the deleted text."""
    now = {"HZ_NOW": "2026-12-01T09:00:00Z"}
    monkeypatch.setenv("HZ_NOW", now["HZ_NOW"])
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world, first_turn=True)
    daemons.start(Home.resolve(world.home), env=now)
    rejected = hz(world.home, "reject", "notes-digest", "--reason", "shorter please", env=now)
    assert rejected.returncode == 0, rejected.stderr
    spine = _wait(world, heinzel_id, "lesson.recorded")
    assert "hz:begin" not in (world.reports / "digest.md").read_text()
    assert [e["data"]["lesson"] for e in spine if e["kind"] == "lesson.recorded"] == [
        "Keep drafts shorter."
    ]
    assert any(e["kind"] == "draft.rejected" for e in spine)
