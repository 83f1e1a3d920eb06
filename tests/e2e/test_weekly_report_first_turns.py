"""Priya's weekly report, its first three moments, with the local model and real files and git.

Mon: created from a sentence, approved as v1. Fri 15:00: the schedule slot
drafts into the report under a tag naming v1, keyed by the slot. Fri 15:02:
the process dies with the draft in the report and its records (``effect.done``
to ``draft.placed``) staged for the group commit with ``turn.finished``, not
yet durable; the next run of the same key finds the draft by its key, writes
``draft.placed`` and ``turn.finished`` and spends nothing more.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, checkout_repo, make_world

SENTENCE = (
    "every Friday at three, draft this week's section of our weekly report from merged PRs "
    "and my notes; I approve"
)
SLOT = "2026-10-30T15:00"

RUN_SLOT = """
import asyncio, sys
from hz_kernel.engine.wakes import Wake, schedule_key
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
async def main():
    kernel = await Kernel.open(Home.resolve())
    row = await kernel.resolve("weekly-report")
    wake = Wake(cause="schedule", key=schedule_key(row["id"], sys.argv[1]), slot=sys.argv[1])
    await kernel.run_wakes(row["id"], [wake])
    await kernel.close()
asyncio.run(main())
"""


def _run_slot(world: World, *, crash_at: str | None = None) -> int:
    env = world.env(
        HZ_NOW="2026-10-30T15:00:30Z", **({"HZ_CRASH_AT": crash_at} if crash_at else {})
    )
    return subprocess.run(
        [sys.executable, "-c", RUN_SLOT, SLOT], env=env, capture_output=True, timeout=120
    ).returncode


async def test_created_then_friday_draft_then_crash_between_placed_and_finished(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    repo = checkout_repo(world)
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(
        sentence=SENTENCE,
        params={"repo": str(repo), "notes": "notes", "document": "reports/weekly.md"},
    )
    assert made.state == "proposed" and "0 15 * * FRI" in made.contract
    decided = await kernel.approve(ref=made.name)
    assert decided.version == 1 and decided.state == "asleep"
    heinzel_id = made.id
    await kernel.close()

    assert _run_slot(world, crash_at="staged:draft.placed") == -signal.SIGKILL
    kinds = world.kinds(heinzel_id)
    assert kinds[-1] == "effect.started" and "turn.finished" not in kinds
    assert (world.reports / "weekly.md").read_text().count("<!-- hz:begin ") == 1
    asked = kinds.count("attempt.started")  # one per model request: the tool rounds' too

    assert _run_slot(world) == 0
    spine = world.spine(heinzel_id)
    kinds = [str(e["kind"]) for e in spine]
    assert kinds.count("turn.started") == 1 and kinds.count("turn.finished") == 1
    assert kinds.count("draft.placed") == 1 and kinds.count("attempt.started") == asked, (
        "the resumed turn never asked the model again"
    )
    started = next(e for e in spine if e["kind"] == "turn.started")
    assert started["key"] == f"{heinzel_id}@{SLOT}" and started["data"]["contract_version"] == 1
    placed = next(e for e in spine if e["kind"] == "draft.placed")
    assert (
        placed["key"]
        == f"{heinzel_id}@v1@{SLOT}@doc:reports/weekly.md#{placed['key'].split('#')[1]}"
    )
    document = (world.reports / "weekly.md").read_text()
    assert document.count("<!-- hz:begin ") == 1
    assert "DRAFT (weekly-report v1)" in document
    assert "Faster checkout" in document and "Retry failed payments" in document
    assert "fixed the login bug" in document
    finished = next(e for e in spine if e["kind"] == "turn.finished")
    assert finished["data"]["disposition"] == "drafted"
    resumed = [e for e in spine if e["kind"] == "turn.resumed"]
    assert [e["data"]["woken_by"] for e in resumed] == ["restart"]

    kernel = await Kernel.open(Home.resolve(world.home))
    (row,) = (await kernel.list_heinzels()).items
    assert row.state == "waiting" and row.pending_draft == placed["key"]
    await kernel.close()
