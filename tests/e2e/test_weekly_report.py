"""Priya's weekly report, the whole worked example, with the local model, real git and files.

Mon created and approved; Fri 15:00 the slot drafts; the process dies with the
draft in the report and its records staged, not yet durable, and the next tick
settles it; Mon the
edited draft is approved and two lessons are learned; Tue Priya widens the
contract herself (v2); Fri the draft records v2 and carries the lessons; Wed a
discovered source is declined and never proposed again; a later Friday she
steers during think while a change to the notes queues one follow-up turn;
and the listing finds her heinzel by its artifact, with its versions, turns,
lessons and cost.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hz_kernel.contracts import ContractError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.observe import Observation
from hz_kernel.store.bodies import read_body
from tests.support.homes import checkout_repo, make_world

SENTENCE = (
    "every Friday at three, draft this week's section of our weekly report from merged PRs "
    "and my notes; I approve"
)
TICK = "from hz_kernel.cli import main; raise SystemExit(main(['tick', '--once']))"


def _events(kernel: Kernel, heinzel_id: str) -> list[tuple[str, str | None, dict[str, object]]]:
    return [(e.kind, e.turn, e.data) for e in kernel.sessions[heinzel_id].scan.events]


async def test_the_worked_weekly_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_LOCAL_USD_PER_MTOK", "2")
    world = make_world(tmp_path)
    (world.notes / "monday.md").write_text(
        "# Monday\n- fixed the login bug CHK-101\n- shipped search CHK-102\n"
    )
    repo = checkout_repo(world)
    report = world.reports / "weekly.md"

    # Mon: created from a sentence, shown, approved as v1
    monkeypatch.setenv("HZ_NOW", "2026-10-26T09:00:00Z")
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(
        sentence=SENTENCE,
        params={"repo": str(repo), "notes": "notes", "document": "reports/weekly.md"},
    )
    assert made.state == "proposed" and '"0 15 * * FRI"' in made.contract
    assert (await kernel.approve(ref="weekly-report")).state == "asleep"
    heinzel_id = made.id
    await kernel.close()

    # Fri 15:00: the slot drafts, and the process dies with the draft in the report and its
    # records (effect.done, draft.placed) staged for the group commit with turn.finished
    crashed = subprocess.run(
        [sys.executable, "-c", TICK],
        env=world.env(HZ_NOW="2026-10-30T15:00:30Z", HZ_CRASH_AT="staged:draft.placed"),
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL
    assert world.kinds(heinzel_id)[-1] == "effect.started"
    assert report.read_text().count("<!-- hz:begin ") == 1
    asked = world.kinds(heinzel_id).count("attempt.started")  # a request per tool round too
    # ... and at 15:40 the tick finds the open turn by its key and settles it, spending nothing
    settled = subprocess.run(
        [sys.executable, "-c", TICK], env=world.env(HZ_NOW="2026-10-30T15:40:00Z"),
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert settled.returncode == 0, settled.stderr
    kinds = world.kinds(heinzel_id)
    assert kinds.count("turn.started") == 1 and kinds.count("turn.finished") == 1
    assert kinds.count("draft.placed") == 1 and kinds.count("attempt.started") == asked
    placed = next(e for e in world.spine(heinzel_id) if e["kind"] == "draft.placed")
    assert str(placed["key"]).startswith(f"{heinzel_id}@v1@2026-10-30T15:00@doc:reports/weekly.md")
    text = report.read_text()
    assert text.count("<!-- hz:begin ") == 1 and "DRAFT (weekly-report v1)" in text

    # Mon: Priya edits (notes above the merged PRs, no ticket numbers), deletes the tag: approved
    edited = re.sub(r"> 🧝 DRAFT.*\n", "", text)
    edited = re.sub(r" CHK-\d+", "", edited)
    merged = re.search(r"### Merged prs\n(?:- .*\n)+", edited)
    notes = re.search(r"### Notes\n(?:- .*\n)+", edited)
    assert merged and notes
    edited = edited.replace(notes.group(0), "").replace(
        merged.group(0), notes.group(0) + "\n" + merged.group(0)
    )
    report.write_text(edited)
    monkeypatch.setenv("HZ_NOW", "2026-11-02T09:00:00Z")
    kernel = await Kernel.open(Home.resolve(world.home))
    await kernel.tick_once()
    detail = await kernel.show("weekly-report")
    lessons = [lesson.lesson for lesson in detail.lessons]
    assert len(lessons) == 2, lessons
    approved = [d for d in detail.drafts if d.status == "approved"]
    assert len(approved) == 1 and (approved[0].share_changed or 0) > 0

    # Tue: Priya widens the contract herself (the same text from the heinzel is refused): v2
    monkeypatch.setenv("HZ_NOW", "2026-11-03T10:00:00Z")
    (world.root / "incidents").mkdir()
    (world.root / "incidents" / "oncall.md").write_text("# On-call\n- payments outage 20 min\n")
    v1 = (world.home / "heinzel" / heinzel_id / "contract" / "v1.prose.md").read_text()
    v2 = v1.replace(
        "  inputs:\n",
        "  inputs:\n    incidents:\n      source: files\n      method: glob\n"
        '      args:\n        pattern: "*.md"\n        root: "incidents"\n      recheck: 1h\n',
        1,
    )
    with pytest.raises(ContractError) as refused:
        await kernel.amend(ref="weekly-report", text=v2, by="heinzel")
    assert refused.value.code == "HZC050"
    widened = await kernel.amend(ref="weekly-report", text=v2, by="user")
    assert any("incidents" in change for change in widened.widens)
    assert (await kernel.approve(ref="weekly-report")).version == 2

    # Fri: the next slot drafts under v2 and carries both lessons
    monkeypatch.setenv("HZ_NOW", "2026-11-06T15:00:30Z")
    tick = await kernel.tick_once()
    assert [w.name for w in tick.woken] == ["weekly-report"]
    async with kernel.holding(heinzel_id):
        events = _events(kernel, heinzel_id)
    friday = [d for k, _, d in events if k == "draft.placed"][-1]
    assert friday["contract_version"] == 2
    assert "DRAFT (weekly-report v2)" in report.read_text()
    turn = [t for k, t, _ in events if k == "turn.started"][-1]
    context = next(
        r for r in read_body(world.home / "heinzel" / heinzel_id, str(turn)) or []
        if r["type"] == "context"
    )  # fmt: skip
    assert all(lesson in context["instructions"] for lesson in lessons)
    assert "payments outage" in str(context["messages"])

    # Wed: a discovered source is proposed, declined, and never proposed again
    monkeypatch.setenv("HZ_NOW", "2026-11-11T10:00:00Z")
    v2_text = (world.home / "heinzel" / heinzel_id / "contract" / "v2.prose.md").read_text()
    v3 = v2_text.replace("    incidents:\n", "    incidents_doc:\n      source: document\n"
                         '      method: section\n      args:\n        path: "incidents/oncall.md"\n'
                         "    incidents:\n", 1)  # fmt: skip
    proposed = await kernel.amend(
        ref="weekly-report", text=v3, by="user", reason="discovered a document"
    )
    # Friday's draft still waits beside it, so the name alone is ambiguous: name the amendment
    declined = await kernel.reject(ref=f"weekly-report@amendment:{proposed.proposal}")
    assert declined.declined
    with pytest.raises(ContractError):
        await kernel.amend(ref="weekly-report", text=v3, by="heinzel")
    async with kernel.holding(heinzel_id):
        events = _events(kernel, heinzel_id)
    assert [d["sources"] for k, _, d in events if k == "amendment.declined"] == [["incidents_doc"]]

    # a later Friday: she steers during think; a change to the notes queues one follow-up turn
    monkeypatch.setenv("HZ_NOW", "2026-11-13T15:00:30Z")
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "30")
    (world.notes / "thursday.md").write_text("# Thursday\n- reviewed the checkout funnel\n")
    steered: list[asyncio.Task[object]] = []

    def during_think(seen: Observation) -> None:
        event = seen.event
        if event is not None and event.kind == "attempt.started" and not steered:
            chat = kernel.chat(ref="weekly-report", message="keep it under ten lines", mode="steer")
            steered.append(asyncio.get_running_loop().create_task(chat))
            (world.notes / "friday.md").write_text("# Friday\n- rolled out the new pricing page\n")

    kernel.observers.append(during_think)
    async with kernel.holding(heinzel_id):
        ticking = asyncio.create_task(kernel.tick_once())
        for _ in range(1000):
            if steered or ticking.done():
                break
            await asyncio.sleep(0.01)
        assert steered, "the Friday slot should have reached think"
        await steered[0]
        monkeypatch.setenv("HZ_NOW", "2026-11-13T16:30:00Z")
        again = await kernel.tick_once()
        await ticking
        events = _events(kernel, heinzel_id)
    assert [k for k, _, _ in events].count("turn.steered") == 1
    assert again.woken == [] or all(w.name == "weekly-report" for w in again.woken)
    requested = [d for k, _, d in events if k == "turn.requested"]
    assert [r["cause"] for r in requested] == ["source-changed"]
    last_two = [d for k, _, d in events if k == "turn.started"][-2:]
    assert "schedule" in last_two[0]["causes"] and last_two[1]["causes"] == ["source-changed"]

    # any time: the listing finds it by its artifact; show has versions, turns, lessons, cost
    listed = await kernel.list_heinzels(artifact=placed["data"]["asset"])
    assert [h.name for h in listed.items] == ["weekly-report"]
    monkeypatch.setenv("HZ_NOW", "2026-11-20T09:00:00Z")
    detail = await kernel.show("weekly-report")
    await kernel.close()
    assert detail.contract_versions == [1, 2]
    assert len(detail.lessons) == 2 and not any(lesson.dismissed for lesson in detail.lessons)
    assert len([t for t in detail.turns if t.status == "finished"]) >= 5
    assert detail.cost_month.total > 0 and "schedule" in detail.cost_month.by_cause
