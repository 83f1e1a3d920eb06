"""The inbox is delivered, and only what was admitted stays (issue 12 items 10 and 13).

A message to a heinzel whose spine another process holds is admitted,
answered ``queued`` (exit 0) and delivered by the next tick; a refused
request leaves nothing in the inbox; a request id reused for other content
is refused with a code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.locks import FileLock
from hz_kernel.store.spine import LOCK_NAME
from tests.support.homes import World, digest_contract, make_world

NOW = "2026-12-01T09:00:00Z"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    for name in ("HZ_CRASH_AT", "HZ_TICK_SECONDS", "HZ_MODEL_DELAY_MS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HZ_NOW", NOW)
    world = make_world(tmp_path)
    monkeypatch.setenv("HZ_HOME", str(world.home))
    return world


def _made(world: World, name: str = "notes-digest") -> str:
    path = world.root / f"{name}.prose.md"
    path.write_text(digest_contract(name))
    world.hz("heinzel", "new", str(path), HZ_NOW=NOW)
    world.hz("approve", name, HZ_NOW=NOW)
    shown = json.loads(world.hz("heinzel", "show", name, "--json", HZ_NOW=NOW).stdout)
    return str(shown["heinzel"]["id"])


def _inbox(world: World, heinzel_id: str) -> list[str]:
    """Every request file kept, waiting or delivered (moved into ``delivered/``)."""
    folder = world.home / "heinzel" / heinzel_id / "inbox"
    return sorted(p.stem for p in [*folder.glob("*.json"), *folder.glob("delivered/*.json")])


def _tick(world: World) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(world.hz("tick", "--once", "--json", HZ_NOW=NOW).stdout)
    return report


def _requests_in_body(world: World, heinzel_id: str, turn: str) -> list[str]:
    body = world.home / "heinzel" / heinzel_id / "turns" / f"{turn}.jsonl"
    records = [json.loads(line) for line in body.read_text().splitlines()]
    return [str(r["message"]) for r in records if r["type"] == "request"]


def test_issue12_item10_a_message_to_a_busy_heinzel_is_queued_and_the_next_tick_delivers_it(
    world: World,
) -> None:
    """`hz heinzel chat` (and `wake`) while another process holds the spine answer 0 with
    "queued"; the next tick delivers both in one turn whose body holds the message."""
    heinzel_id = _made(world)
    _tick(world)
    lock = FileLock(world.home / "heinzel" / heinzel_id / LOCK_NAME).acquire()
    try:
        chat = world.hz("heinzel", "chat", "notes-digest", "add a summary", "--request-id", "m1")
        assert chat.returncode == 0 and "queued" in chat.stdout
        wake = world.hz("heinzel", "wake", "notes-digest", "--request-id", "w1", "--json")
        assert json.loads(wake.stdout)["status"] == "queued"
        assert _inbox(world, heinzel_id) == ["m1", "w1"]
        held = _tick(world)
        assert held["woken"] == [] and held["problems"] == []
        assert [d["reason"] for d in held["deferred"]] == ["busy"]
    finally:
        lock.release()

    delivered = _tick(world)
    (woken,) = delivered["woken"]
    assert (woken["name"], woken["causes"]) == ("notes-digest", ["asked"])
    assert _requests_in_body(world, heinzel_id, woken["turn"]) == ["add a summary"]
    (started,) = [
        e["data"] for e in world.spine(heinzel_id) if e["kind"] == "turn.started"
        and e["turn"] == woken["turn"]
    ]  # fmt: skip
    assert sorted(started["request_ids"]) == ["m1", "w1"]  # type: ignore[index]
    assert _tick(world)["woken"] == [], "a delivered message is delivered once"


def test_a_request_whose_marker_a_power_cut_lost_is_delivered_by_the_first_tick_after(
    world: World,
) -> None:
    """Markers are not fsynced: a request file kept by a power cut that lost its marker is
    found by the first tick of the next process, which marks every inbox holding one."""
    heinzel_id = _made(world)
    _tick(world)
    lock = FileLock(world.home / "heinzel" / heinzel_id / LOCK_NAME).acquire()
    try:
        chat = world.hz("heinzel", "chat", "notes-digest", "after the cut", "--request-id", "c1")
        assert chat.returncode == 0 and "queued" in chat.stdout
    finally:
        lock.release()
    marker = world.home / "heinzel" / "undelivered" / heinzel_id
    marker.unlink()

    (woken,) = _tick(world)["woken"]
    assert (woken["name"], woken["causes"]) == ("notes-digest", ["asked"])
    assert _requests_in_body(world, heinzel_id, woken["turn"]) == ["after the cut"]
    assert not marker.exists()
    assert _tick(world)["woken"] == [], "a delivered message is delivered once"


async def test_issue12_item10_the_process_holding_the_spine_delivers_at_its_next_tick(
    world: World,
) -> None:
    """A long-lived kernel (a daemon's, an embedded cockpit's) keeps spines held: a message
    queued by another process reaches a turn at that kernel's next tick, not days later."""
    heinzel_id = _made(world)
    _tick(world)
    kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
    try:
        await kernel.session(heinzel_id)
        chat = world.hz("heinzel", "chat", "notes-digest", "mention the release")
        assert chat.returncode == 0 and "queued" in chat.stdout
        report = await kernel.tick_once()
        woken = [w for w in report.woken if w.causes == ["asked"]]
        assert [w.heinzel for w in woken] == [heinzel_id]
        for task in list(kernel.tasks):
            await task
        held = kernel.sessions[heinzel_id]
        asked = [e for e in held.scan.events if e.kind == "turn.started" and e.data["request_ids"]]
        assert len(asked) == 1
        assert _requests_in_body(world, heinzel_id, str(asked[0].turn)) == ["mention the release"]
    finally:
        await kernel.close()


def test_issue12_item10_a_refused_wake_or_chat_leaves_nothing_in_the_inbox(world: World) -> None:
    """HZE003 on a paused heinzel: nothing is admitted, and unpausing runs nothing of it."""
    heinzel_id = _made(world)
    world.hz("heinzel", "pause", "notes-digest")
    wake = world.hz("heinzel", "wake", "notes-digest", check=False)
    chat = world.hz("heinzel", "chat", "notes-digest", "hello", check=False)
    for refused in (wake, chat):
        assert refused.returncode != 0 and refused.stderr.startswith("HZE003")
    assert _inbox(world, heinzel_id) == []
    assert not (world.home / "heinzel" / "undelivered" / heinzel_id).exists()
    world.hz("heinzel", "unpause", "notes-digest")
    kinds = world.kinds(heinzel_id)
    assert "turn.started" not in kinds


def test_issue12_item13_a_request_id_reused_for_other_content_is_refused(world: World) -> None:
    """A chat reusing a wake's id is refused with HZS034 (its text would reach no turn);
    the same id with the same content stays idempotent."""
    heinzel_id = _made(world)
    world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1")
    reused = world.hz("heinzel", "chat", "notes-digest", "hello", "--request-id", "r1", check=False)
    assert reused.returncode == 1 and reused.stderr.startswith("HZS034")
    again = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1")
    assert again.returncode == 0
    assert world.kinds(heinzel_id).count("turn.started") == 1
    assert _inbox(world, heinzel_id) == ["r1"]
