"""Issue 12 item 5: a turn outlives a long crash, and an ended turn leaves no effect open.

Real ``hz`` processes killed with SIGKILL at named points (``HZ_CRASH_AT``);
``HZ_NOW`` pins each process's clock, so "crash at 15:00, restart at 15:40"
is the seed's worked example, whatever day the test runs on.
"""

from __future__ import annotations

import signal
from pathlib import Path

import orjson

from tests.support.homes import World, digest_contract, make_world

CREATED = "2026-10-30T14:50:00Z"
CRASH = "2026-10-30T15:00:00Z"
RESTART = "2026-10-30T15:40:00Z"


def _world(tmp_path: Path, settings: str = "") -> tuple[World, str]:
    world = make_world(tmp_path)
    if settings:
        with (world.home / "hz.toml").open("a") as toml:
            toml.write(settings)
    contract = tmp_path / "digest.prose.md"
    contract.write_text(digest_contract())
    made = orjson.loads(world.hz("heinzel", "new", str(contract), "--json", HZ_NOW=CREATED).stdout)
    world.hz("approve", "notes-digest", HZ_NOW=CREATED)
    return world, str(made["id"])


def _crash(world: World, point: str, *args: str, **env: str) -> None:
    crashed = world.hz(*args, check=False, HZ_CRASH_AT=point, **env)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr


def _finished(world: World, heinzel_id: str) -> list[dict[str, object]]:
    return [e["data"] for e in world.spine(heinzel_id) if e["kind"] == "turn.finished"]  # type: ignore[misc]


def _pending_drafts(world: World) -> list[str]:
    drafts = orjson.loads(world.hz("drafts", "--json", HZ_NOW=RESTART).stdout)
    return [str(d["key"]) for d in drafts["items"]]


def _sections(world: World) -> int:
    return (world.reports / "digest.md").read_text().count("<!-- hz:begin ")


def test_issue12_item5_a_turn_crashed_at_1500_resumes_at_1540_and_finishes(
    tmp_path: Path,
) -> None:
    """The timeout counts running time: 40 minutes down are not 40 minutes of work."""
    world, heinzel_id = _world(tmp_path)
    _crash(world, "effect:before-done", "heinzel", "wake", "notes-digest", "--request-id", "r1",
           HZ_NOW=CRASH)  # fmt: skip
    world.hz("heinzel", "resume", "notes-digest", HZ_NOW=RESTART)
    finished = _finished(world, heinzel_id)
    assert [(f["disposition"], f.get("reason")) for f in finished] == [("drafted", None)]
    assert finished[0]["duration_ms"] < 900_000
    done = [e["data"] for e in world.spine(heinzel_id) if e["kind"] == "effect.done"]
    assert [d["found_on_resume"] for d in done] == [True]
    placed = [e["data"]["key"] for e in world.spine(heinzel_id) if e["kind"] == "draft.placed"]
    assert _pending_drafts(world) == placed and len(placed) == 1
    assert _sections(world) == 1


def test_issue12_item5_the_timeout_still_ends_a_turn_that_ran_too_long(tmp_path: Path) -> None:
    """Running time before the crash counts: a think step slower than the timeout is abandoned.

    The local model is held 150 ms per chunk, so the first run spends at least that long
    between ``turn.started`` and ``step.done:think``; the timeout is 0.1 s. The clock is the
    real one here (running time needs it to move); nothing depends on the date.
    """
    world, heinzel_id = _world(tmp_path, "[heinzel]\nturn_timeout_s = 0.1\n")
    _crash(world, "step.done:think", "heinzel", "wake", "notes-digest", "--request-id", "r1",
           HZ_MODEL_DELAY_MS="150")  # fmt: skip
    world.hz("heinzel", "resume", "notes-digest")
    finished = _finished(world, heinzel_id)
    assert [(f["disposition"], f["reason"], f["step"]) for f in finished] == [
        ("abandoned", "timeout", "think")
    ]
    assert not (world.reports / "digest.md").exists()


def test_issue12_item5_a_draft_found_on_an_abandoned_turn_is_the_pending_draft(
    tmp_path: Path,
) -> None:
    """Placed before the crash, then the turn is abandoned: the section is tracked, not orphaned."""
    world, heinzel_id = _world(tmp_path)
    _crash(world, "effect:before-done", "heinzel", "wake", "notes-digest", "--request-id", "r1",
           HZ_NOW=CRASH)  # fmt: skip
    for _ in range(3):
        _crash(world, "turn.resumed", "heinzel", "resume", "notes-digest", HZ_NOW=RESTART)
    world.hz("heinzel", "resume", "notes-digest", HZ_NOW=RESTART)
    finished = _finished(world, heinzel_id)
    assert [f["disposition"] for f in finished] == ["abandoned"]
    assert "resumed 3 times" in str(finished[0]["reason"])
    spine = world.spine(heinzel_id)
    started = [e["data"]["key"] for e in spine if e["kind"] == "effect.started"]
    done = [e["data"] for e in spine if e["kind"] == "effect.done"]
    assert [(d["key"], d["found_on_resume"]) for d in done] == [(started[0], True)]
    assert _pending_drafts(world) == started
    assert _sections(world) == 1


def test_issue12_item5_stopping_a_crashed_turn_settles_its_open_effect(tmp_path: Path) -> None:
    """Crashed after ``effect.started``, before the document was written: ``effect.interrupted``."""
    world, heinzel_id = _world(tmp_path)
    _crash(world, "effect.started", "heinzel", "wake", "notes-digest", "--request-id", "r1",
           HZ_NOW=CRASH)  # fmt: skip
    world.hz("heinzel", "stop", "notes-digest", HZ_NOW=RESTART)
    spine = world.spine(heinzel_id)
    finished = _finished(world, heinzel_id)
    assert [(f["disposition"], f["reason"]) for f in finished] == [("abandoned", "stopped")]
    started = [e["data"]["key"] for e in spine if e["kind"] == "effect.started"]
    interrupted = [e["data"] for e in spine if e["kind"] == "effect.interrupted"]
    assert [(i["key"], i["effect"]) for i in interrupted] == [(started[0], "documents.place_draft")]
    kinds = [e["kind"] for e in spine]
    assert kinds.index("effect.interrupted") < kinds.index("turn.finished")
    assert "draft.placed" not in kinds and _pending_drafts(world) == []


def test_issue12_item5_an_effect_that_fails_writes_effect_failed(tmp_path: Path) -> None:
    """The document cannot be written (its path is a directory): the ledger says so."""
    world, heinzel_id = _world(tmp_path)
    (world.reports / "digest.md").mkdir()
    report = orjson.loads(
        world.hz("heinzel", "wake", "notes-digest", "--json", HZ_NOW=CRASH).stdout
    )
    assert report["disposition"] == "failed"
    spine = world.spine(heinzel_id)
    started = [e["data"]["key"] for e in spine if e["kind"] == "effect.started"]
    failed = [e["data"] for e in spine if e["kind"] == "effect.failed"]
    assert [f["key"] for f in failed] == started and len(started) == 1
    assert "directory" in str(failed[0]["error"])
    assert "effect.done" not in [e["kind"] for e in spine]
