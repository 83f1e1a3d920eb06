"""A new draft never replaces a pending draft the user edited: it waits for their decision."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from hz_kernel.api import NewHeinzel, TurnReport
from hz_kernel.engine.steps.act import APPROVAL_WAIT, EDITS_WAIT
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, digest_contract, make_world


async def drafted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[World, Kernel, NewHeinzel, TurnReport]:
    """A digest heinzel, approved, that drafted once at 09:00 (its draft pending)."""
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00Z")
    world = make_world(tmp_path)
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    first = await kernel.wake(ref=made.id)
    assert first.disposition == "drafted"
    return world, kernel, made, first


async def test_edits_to_a_pending_draft_survive_a_new_draft_until_the_user_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world, kernel, made, first = await drafted_once(tmp_path, monkeypatch)
    digest = world.reports / "digest.md"
    edited = (
        digest.read_text()
        .replace("- shipped search\n", "- shipped search (beta, 10% of users)\n")
        .replace("- reviewed the checkout flow\n", "")
    )
    digest.write_text(edited)
    (world.notes / "wednesday.md").write_text("# Wednesday\n- paid the invoices\n")

    monkeypatch.setenv("HZ_NOW", "2026-12-01T10:00:00Z")
    moved = await kernel.tick_once()

    assert [w.heinzel for w in moved.woken] == [made.id]
    assert digest.read_text() == edited
    detail = await kernel.show(made.id)
    assert [d.status for d in detail.drafts] == ["pending"]
    assert [(t.status, t.report) for t in detail.turns if t.turn != first.turn] == [
        ("waiting", EDITS_WAIT)
    ]

    await kernel.approve(ref=made.id)
    await kernel.tick_once()
    text = digest.read_text()
    await kernel.close()
    assert "paid the invoices" in text and text.count("<!-- hz:begin ") == 1
    assert world.kinds(made.id).count("draft.placed") == 2


async def test_a_second_move_while_a_turn_waits_on_the_edits_supersedes_the_older_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edits-wait helper found two turns parked on one edited draft, the older never
    resumed. A turn that parks (or places a draft) ends the older parked turn: abandoned,
    reason superseded; only the newest waits, and the approval resumes it."""
    world, kernel, made, first = await drafted_once(tmp_path, monkeypatch)
    digest = world.reports / "digest.md"
    digest.write_text(digest.read_text().replace("- shipped search\n", "- shipped search!\n"))
    for hour, note in ((10, "paid the invoices"), (11, "booked the venue")):
        (world.notes / f"note{hour}.md").write_text(f"# Note\n- {note}\n")
        monkeypatch.setenv("HZ_NOW", f"2026-12-01T{hour}:00:00Z")
        await kernel.tick_once()

    spine = world.spine(made.id)
    waited = [e["turn"] for e in spine if e["kind"] == "turn.waiting"]
    assert len(waited) == 2 and first.turn not in waited
    older, newer = waited
    (ended,) = [e["data"] for e in spine if e["kind"] == "turn.finished" and e["turn"] == older]
    assert (ended["disposition"], ended["reason"]) == ("abandoned", "superseded")

    await kernel.approve(ref=made.id)
    await kernel.tick_once()
    text = digest.read_text()
    await kernel.close()
    finished = {e["turn"]: e["data"] for e in world.spine(made.id) if e["kind"] == "turn.finished"}
    assert finished[newer]["disposition"] == "drafted"
    assert "booked the venue" in text and "paid the invoices" in text


async def _held_turn_meets(
    world: World,
    kernel: Kernel,
    made: NewHeinzel,
    monkeypatch: pytest.MonkeyPatch,
    decide: Callable[[Path], Awaitable[None]],
) -> TurnReport:
    """A second turn that drafts again, held in think while ``decide`` acts on the pending
    draft (as a user would, in the file or with ``hz approve``), then let go."""
    hold = world.root / "hold"
    hold.touch()
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(hold))
    (world.notes / "wednesday.md").write_text("# Wednesday\n- paid the invoices\n")
    monkeypatch.setenv("HZ_NOW", "2026-12-01T10:00:00Z")
    turn = asyncio.ensure_future(kernel.wake(ref=made.id))
    while not any(e["kind"] == "attempt.started" for e in world.spine(made.id)[-3:]):
        await asyncio.sleep(0.02)
    await decide(world.reports / "digest.md")
    hold.unlink()
    return await turn


async def test_a_draft_approved_in_the_file_while_a_turn_runs_is_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new-user pass: the user deleted the DRAFT line (approving) and edited the text while
    a turn of the same heinzel ran; the turn then placed its new draft over both, and the
    approval and the edits were gone. The turn now waits until the approval is observed."""
    world, kernel, made, first = await drafted_once(tmp_path, monkeypatch)
    approved: list[str] = []

    async def approve_in_the_file(digest: Path) -> None:
        lines = digest.read_text().splitlines(keepends=True)
        kept = [line for line in lines if "🧝 DRAFT" not in line]
        text = "".join(kept).replace("- shipped search\n", "- shipped search (USER EDIT)\n")
        digest.write_text(text)
        approved.append(text)

    second = await _held_turn_meets(world, kernel, made, monkeypatch, approve_in_the_file)
    assert second.status == "waiting"
    digest = world.reports / "digest.md"
    assert digest.read_text() == approved[0]
    detail = await kernel.show(made.id)
    assert [(t.status, t.report) for t in detail.turns if t.turn == second.turn] == [
        ("waiting", APPROVAL_WAIT)
    ]

    monkeypatch.setenv("HZ_NOW", "2026-12-01T11:00:00Z")
    await kernel.tick_once()
    await kernel.tick_once()
    text = digest.read_text()
    await kernel.close()
    kinds = world.kinds(made.id)
    assert kinds.count("approval.observed") == 1
    spine = world.spine(made.id)
    placed = next(e for e in spine if e["kind"] == "draft.placed" and e["turn"] == first.turn)
    observed = next(e for e in spine if e["kind"] == "approval.observed")
    assert observed["data"]["key"] == placed["data"]["key"]
    assert observed["data"]["share_changed"] > 0
    assert "paid the invoices" in text and kinds.count("draft.placed") == 2


async def test_hz_approve_while_a_turn_runs_is_recorded_and_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hz approve`` during a turn said "approved" while the turn superseded the draft and no
    approval was ever recorded (the new-user pass)."""
    world, kernel, made, _ = await drafted_once(tmp_path, monkeypatch)
    decided: list[Any] = []

    async def approve_with_hz(digest: Path) -> None:
        decided.append(asyncio.ensure_future(kernel.approve(ref=made.id)))
        while "🧝 DRAFT" in digest.read_text():
            await asyncio.sleep(0.02)

    second = await _held_turn_meets(world, kernel, made, monkeypatch, approve_with_hz)
    decision = await decided[0]
    assert second.status == "waiting", second
    assert decision.what == "draft"
    assert world.kinds(made.id).count("approval.observed") == 1
    monkeypatch.setenv("HZ_NOW", "2026-12-01T11:00:00Z")
    await kernel.tick_once()
    text = (world.reports / "digest.md").read_text()
    await kernel.close()
    assert "paid the invoices" in text and world.kinds(made.id).count("draft.placed") == 2
