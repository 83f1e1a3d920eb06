"""A new draft never replaces a pending draft the user edited: it waits for their decision."""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel.engine.steps.act import EDITS_WAIT
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import digest_contract, make_world


async def test_edits_to_a_pending_draft_survive_a_new_draft_until_the_user_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00Z")
    world = make_world(tmp_path)
    digest = world.reports / "digest.md"
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    first = await kernel.wake(ref=made.id)
    assert first.disposition == "drafted"
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
