"""Issue 18 item 5: the flow. Theo's row unapproved at Friday noon: Priya's report goes on
with the row approved before, and says so; only Theo's and Priya's heinzels hear of it.

``theo-row`` keeps Theo's row; ``weekly-report`` (Priya's, Fridays at 15:00) reads
its approved output and needs it by Friday noon, escalating to ``priya-lead``.
Theo's new draft of the row waits all week: he is nudged the day before and
the hour before (once each, however often the tick runs), told at noon that
the report goes on without it, and the report drafted at 15:00 carries the
old row with a first line saying it is stale. A bystander hears nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tick_helpers import contract, made

from tests.support.homes import World

MONDAY = "2026-10-26T09:00:00Z"
FLOW = {"needed_by": "0 12 * * FRI", "escalate": ["priya-lead"]}
FILES = {"source": "files", "method": "glob", "args": {"pattern": "*.md", "root": "notes"}}


def _tick(world: World, now: str) -> dict[str, Any]:
    done = world.hz("tick", "--once", "--json", check=False, HZ_NOW=now)
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["problems"] == [], report["problems"]
    return report


def _events(world: World, heinzel_id: str, kind: str) -> list[dict[str, Any]]:
    spine = world.home / "heinzel" / heinzel_id / "session.jsonl"
    lines = [json.loads(line) for line in spine.read_text().splitlines()]
    return [line for line in lines if line["kind"] == kind]


def _notices(world: World, heinzel_id: str) -> list[str]:
    return [e["data"]["notice"] for e in _events(world, heinzel_id, "notice.raised")]


def _approve_in_document(path: Path) -> None:
    """Approve the waiting draft as a user does: delete its DRAFT line."""
    kept = [line for line in path.read_text().splitlines() if "DRAFT" not in line]
    path.write_text("\n".join(kept) + "\n")


@dataclass(frozen=True)
class Chain:
    theo: str
    report: str
    row_doc: Path


def _chain(world: World, schedule: str) -> Chain:
    """Theo's row drafted and approved on Monday; Priya's report (on ``schedule``) reading it,
    needed by Friday noon."""
    theo = made(world, "theo-row", contract("theo-row", inputs={"notes": FILES}), MONDAY)
    _tick(world, MONDAY)
    row_doc = world.root / "theo-row.md"
    _approve_in_document(row_doc)
    _tick(world, "2026-10-26T10:00:00Z")
    assert "DRAFT" not in row_doc.read_text() and "shipped search" in row_doc.read_text()
    upstream = {
        "source": "heinzel",
        "method": "approved_output",
        "args": {"heinzel": "theo-row", "output": "theo-row"},
        **FLOW,
    }
    text = contract("weekly-report", inputs={"theo": upstream}, schedule=schedule)
    report = made(world, "weekly-report", text, "2026-10-26T11:00:00Z")
    _tick(world, "2026-10-26T11:00:00Z")
    return Chain(theo, report, row_doc)


def _new_row_waits(world: World, chain: Chain) -> None:
    """Thursday: Theo's row is drafted again, and the draft waits for him."""
    (world.notes / "thursday.md").write_text("# Thursday\n- rewrote the checkout flow\n")
    _tick(world, "2026-10-29T09:00:00Z")
    assert "DRAFT" in chain.row_doc.read_text()


def test_issue18_item5_an_unapproved_upstream_at_the_deadline_makes_the_reader_say_stale(
    world: World,
) -> None:
    bystander = made(world, "bystander", contract("bystander", inputs={"notes": FILES}), MONDAY)
    chain = _chain(world, "0 15 * * FRI")
    theo, report = chain.theo, chain.report
    _new_row_waits(world, chain)
    assert _notices(world, theo) == [], "nobody is nudged more than a day ahead"

    for now in ("2026-10-29T13:00:00Z", "2026-10-29T14:00:00Z"):
        _tick(world, now)
    day_before = _notices(world, theo)
    assert len(day_before) == 1, day_before
    assert day_before[0].startswith(
        "weekly-report needs theo-row's theo-row approved by Fri 30 Oct 12:00 UTC (in 23 h"
    )

    for now in ("2026-10-30T11:10:00Z", "2026-10-30T11:40:00Z"):
        _tick(world, now)
    hour_before = _notices(world, theo)[1:]
    assert len(hour_before) == 1 and "(in 50 min)" in hour_before[0], hour_before

    _tick(world, "2026-10-30T12:05:00Z")
    late = _notices(world, theo)[2:]
    assert len(late) == 1, late
    assert (
        "its draft still waits, so weekly-report goes on with the text approved before" in (late[0])
    )
    assert late[0].endswith("Told: priya-lead.")

    friday = _tick(world, "2026-10-30T15:00:00Z")
    assert "weekly-report" in [w["name"] for w in friday["woken"]]
    document = (world.root / "weekly-report.md").read_text()
    assert (
        "> Stale input: theo-row's theo-row was needed by Fri 30 Oct 12:00 UTC and its newer "
        "draft is not approved; this uses the text approved before." in document
    )
    assert document.count("Stale input") == 1, "hz writes the line once; the model never sees it"
    (finished,) = [
        e for e in _events(world, report, "turn.finished") if e["ts"].startswith("2026-10-30T15")
    ]
    assert finished["data"]["report"].endswith("(stale input)")
    (gathered,) = [
        e["data"]["inputs"]
        for e in _events(world, report, "step.done")
        if e["data"]["step"] == "gather" and e["turn"] == finished["turn"]
    ]
    assert gathered[0]["fell_back"] is True
    body = world.home / "heinzel" / report / "turns" / f"{finished['turn']}.jsonl"
    (theo_input,) = [
        record
        for line in body.read_text().splitlines()
        if (record := json.loads(line))["type"] == "input" and record["name"] == "theo"
    ]
    assert "rewrote the checkout flow" not in theo_input["content"], "a waiting draft was read"
    assert "shipped search" in theo_input["content"]

    shown = world.hz("heinzel", "show", "theo-row", HZ_NOW="2026-10-30T15:00:00Z").stdout
    assert f"notice (2026-10-30T12:05): {late[0]}" in shown
    assert _notices(world, bystander) == [] and _notices(world, report) == []
    assert len(_notices(world, theo)) == 3, "no notice twice"


def test_issue18_item5_an_approved_upstream_is_neither_nudged_nor_stale(world: World) -> None:
    """With nothing waiting for Theo there is nothing to nudge, and the report is fresh."""
    theo = _chain(world, "0 15 * * FRI").theo
    for now in ("2026-10-29T13:00:00Z", "2026-10-30T11:40:00Z", "2026-10-30T12:05:00Z"):
        _tick(world, now)
    assert _notices(world, theo) == []
    _tick(world, "2026-10-30T15:00:00Z")
    assert "Stale input" not in (world.root / "weekly-report.md").read_text()


def test_issue18_item5_needed_by_on_a_source_that_is_no_heinzel_is_refused(world: World) -> None:
    text = contract("wrong", inputs={"notes": {**FILES, "needed_by": "0 12 * * FRI"}})
    path = world.root / "wrong.prose.md"
    path.write_text(text)
    done = world.hz("heinzel", "new", str(path), check=False, HZ_NOW=MONDAY)
    assert done.returncode == 1
    assert (
        done.stderr.startswith(f"HZC103: {path}:3: hz.inputs.notes: ")
        and "needed_by is for another heinzel" in done.stderr
    )


def _waiting_upstream(world: World) -> Chain:
    """Priya's report runs Fridays at 09:00, three hours before it needs Theo's row, and
    Theo's newer row waits for him."""
    chain = _chain(world, "0 9 * * FRI")
    _new_row_waits(world, chain)
    return chain


def _parked(world: World, report: str) -> dict[str, Any]:
    (waiting,) = [
        e for e in _events(world, report, "turn.waiting") if e["ts"].startswith("2026-10-30T09")
    ]
    return waiting


def test_issue18_item5_a_reader_before_the_deadline_waits_and_falls_back_at_it(
    world: World,
) -> None:
    """The 09:00 turn parks until noon; nobody approves; at noon it goes on, stale."""
    report = _waiting_upstream(world).report
    _tick(world, "2026-10-30T09:00:00Z")
    parked = _parked(world, report)
    assert parked["data"]["step"] == "gather"
    assert parked["data"]["until"] == "2026-10-30T12:00:00Z"
    assert (
        not (world.root / "weekly-report.md").exists()
        or "Stale" not in (world.root / "weekly-report.md").read_text()
    )
    _tick(world, "2026-10-30T11:00:00Z")
    assert [e for e in _events(world, report, "turn.resumed")] == [], "woken early"
    _tick(world, "2026-10-30T12:00:00Z")
    (resumed,) = _events(world, report, "turn.resumed")
    assert resumed["turn"] == parked["turn"] and resumed["data"]["woken_by"] == "timer"
    document = (world.root / "weekly-report.md").read_text()
    assert "> Stale input: theo-row's theo-row was needed by Fri 30 Oct 12:00 UTC" in document


def test_issue18_item5_a_waiting_reader_takes_the_row_approved_in_time(world: World) -> None:
    """Theo approves at 10:30: the parked turn resumes on the approval and is fresh."""
    chain = _waiting_upstream(world)
    report, row_doc = chain.report, chain.row_doc
    _tick(world, "2026-10-30T09:00:00Z")
    parked = _parked(world, report)
    _approve_in_document(row_doc)
    _tick(world, "2026-10-30T10:30:00Z")
    _tick(world, "2026-10-30T10:31:00Z")
    (resumed,) = _events(world, report, "turn.resumed")
    assert resumed["turn"] == parked["turn"] and resumed["data"]["woken_by"] == "source"
    document = (world.root / "weekly-report.md").read_text()
    assert "Stale input" not in document and "rewrote the checkout flow" in document
