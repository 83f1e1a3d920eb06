"""Issue 12 item 12: one heinzel's failure is that heinzel's — in ``hz tick --once``.

Whatever the tick's work for one heinzel raises (a coded error or not), the
tick reports it, records it (``hz heinzel list``/``show`` carry it), leaves
that heinzel alone until its retry time (doubling with each failure in a
row) and goes on with every other heinzel.
"""

from __future__ import annotations

import json
import signal
from datetime import datetime, timedelta

from tests.support.faults import (
    SLOT_DUE_AT,
    hourly_digest,
    listed,
    source_cache_is_a_file,
    turns_dir_is_a_file,
)
from tests.support.homes import World


def _tick(world: World, now: str) -> tuple[int, dict[str, object], str]:
    result = world.hz("tick", "--once", "--json", check=False, HZ_NOW=now)
    assert "Traceback" not in result.stderr and "HZX001" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


def _names(entries: object) -> set[str]:
    assert isinstance(entries, list)
    return {str(entry["name"]) for entry in entries}


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _later(stamp: str, seconds: float) -> str:
    return (_at(stamp) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_one_failing_heinzel_is_recorded_backed_off_and_never_stops_the_others(
    world: World,
) -> None:
    """Issue 12 item 12: a heinzel whose turn cannot run fails alone, shown and retried later."""
    broken = hourly_digest(world, "a-broken")  # sorts first: it is tried before the others
    hourly_digest(world, "b-fine")
    hourly_digest(world, "c-fine")
    turns_dir_is_a_file(world, broken)

    code, report, stderr = _tick(world, SLOT_DUE_AT)
    assert code == 1
    assert _names(report["woken"]) >= {"b-fine", "c-fine"}
    problems = report["problems"]
    assert isinstance(problems, list)
    assert [p["heinzel"] for p in problems] == [broken]
    line = stderr.strip().splitlines()[-1]
    assert line.startswith(f"{problems[0]['code']}: a-broken: ")

    rows = listed(world, HZ_NOW=SLOT_DUE_AT)
    failure = rows["a-broken"]["failure"]
    assert failure["code"] == problems[0]["code"] and failure["failures"] == 1
    assert rows["b-fine"]["failure"] is None and rows["c-fine"]["failure"] is None
    assert rows["b-fine"]["last_disposition"] and rows["c-fine"]["last_disposition"]
    shown = world.hz("heinzel", "show", "a-broken", HZ_NOW=SLOT_DUE_AT).stdout
    assert "failing since" in shown and failure["code"] in shown
    assert "a-broken (failing)" in world.hz("heinzel", "list", HZ_NOW=SLOT_DUE_AT).stdout

    # Before its retry time the failed heinzel is left alone: deferred, not a problem again.
    first_wait = (_at(failure["retry_at"]) - _at(failure["at"])).total_seconds()
    code, report, _ = _tick(world, _later(failure["at"], first_wait / 2))
    assert code == 0 and report["problems"] == []
    deferred = report["deferred"]
    assert isinstance(deferred, list)
    assert [(d["name"], d["reason"]) for d in deferred] == [("a-broken", "backoff")]

    # At its retry time it is tried again; failing again, it waits longer.
    code, report, _ = _tick(world, _later(failure["retry_at"], 1))
    assert code == 1
    again = listed(world, HZ_NOW=SLOT_DUE_AT)["a-broken"]["failure"]
    assert again["failures"] == 2 and again["since"] == failure["since"]
    assert (_at(again["retry_at"]) - _at(again["at"])).total_seconds() > first_wait

    # Once the fault is gone, the next try succeeds and the record is cleared.
    (world.home / "heinzel" / broken / "turns").unlink()
    code, report, _ = _tick(world, _later(again["retry_at"], 1))
    assert code == 0, report
    assert "a-broken" in _names(report["woken"])
    assert listed(world, HZ_NOW=SLOT_DUE_AT)["a-broken"]["failure"] is None


def test_an_interrupted_turn_whose_body_was_deleted_does_not_stop_the_others(
    world: World,
) -> None:
    """Issue 12 item 12: a turn crashed mid-way whose body is gone hurts only its heinzel."""
    broken = hourly_digest(world, "a-broken")
    hourly_digest(world, "b-fine")
    crashed = world.hz(
        "heinzel",
        "wake",
        "a-broken",
        check=False,
        HZ_NOW="2026-12-01T09:55:00Z",
        HZ_CRASH_AT="step.done:outcome",
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    bodies = list((world.home / "heinzel" / broken / "turns").glob("*.jsonl"))
    assert bodies
    for body in bodies:
        body.unlink()

    code, report, _ = _tick(world, SLOT_DUE_AT)
    assert "b-fine" in _names(report["woken"])
    rows = listed(world, HZ_NOW=SLOT_DUE_AT)
    problems = report["problems"]
    assert isinstance(problems, list)
    if problems:  # the broken turn failed: that is a-broken's, recorded as such
        assert code == 1 and {p["heinzel"] for p in problems} == {broken}
        assert rows["a-broken"]["failure"] is not None
    assert rows["b-fine"]["failure"] is None


def test_a_broken_source_cache_is_one_coded_line_naming_its_reader(world: World) -> None:
    """Issue 12 item 12: a source cache that cannot be written is a coded line naming the
    heinzel whose input it stops (it once failed the whole tick); never HZX001."""
    hourly_digest(world, "digest")
    cache = source_cache_is_a_file(world)
    result = world.hz("tick", "--once", check=False, HZ_NOW=SLOT_DUE_AT)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"HZS090: digest: {cache}: refused: it is a regular file, not a directory"]


def test_a_source_that_cannot_be_read_names_the_heinzels_that_read_it(world: World) -> None:
    """Issue 12 item 12: a problem names whose work it stops, a failed source too.

    Without the name, ``HZT020: /home/me/notes: …`` leaves the user to guess which
    heinzel has the wrong path (the tick reads each source once for all its readers).
    """
    hourly_digest(world, "fine")
    world.hz(
        "heinzel",
        "new",
        "--template",
        "digest",
        "--param",
        "name=lost",
        "--param",
        f"notes={world.root / 'no-such-folder'}",
        "--param",
        "document=lost.md",
        "--param",
        "section=lost",
        "--param",
        "schedule=0 * * * *",
        HZ_NOW=SLOT_DUE_AT,
    )
    world.hz("approve", "lost", HZ_NOW=SLOT_DUE_AT)

    code, report, stderr = _tick(world, SLOT_DUE_AT)
    assert code == 1
    problems = report["problems"]
    assert isinstance(problems, list)
    assert [(p["code"], p["heinzel"]) for p in problems] == [("HZT020", None)]
    assert problems[0]["place"] == f"lost: {world.root / 'no-such-folder'}"
    assert stderr.strip().splitlines()[-1].startswith("HZT020: lost: ")
    assert "fine" in _names(report["woken"])
