"""issue 14 item 3: ``draft.review`` gives a remote cockpit the texts the review desk compares.

The same operation on both heads — the kernel embedded (``LocalClient``) and
a real daemon over HTTP (``HttpClient``) — answers the same: the draft as
placed, the section's last approved text (the user's edit), and the line
``$EDITOR`` opens at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import Daemons, discovery, hz

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.commands.review import NEVER_APPROVED
from hz_kernel.http_client import HttpClient
from tests.tui import worlds

NOW = "2026-12-01T09:00:00+00:00"


async def test_issue14_item3_draft_review_carries_the_last_approved_text_on_both_heads(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)
    world = await worlds.build_redrafted(tmp_path, ("notes-digest", "team-digest"))
    local = await LocalClient.open(world.home)
    try:
        made = await local.kernel.new(text=worlds.digest("fresh-digest"))
        await local.kernel.approve(ref=made.name)
        await local.kernel.wake(ref=made.name)
        drafts = (await local.call(ops.DRAFTS, ops.Empty())).items
        embedded = [await local.call(ops.REVIEW, ops.DraftKey(key=d.key)) for d in drafts]
    finally:
        await local.close()
    daemons.start(world.home, env={"HZ_NOW": NOW, "HZ_TICK_SECONDS": "3600"})
    try:
        async with HttpClient(discovery(world.home)) as remote:
            wired = [await remote.call(ops.REVIEW, ops.DraftKey(key=d.key)) for d in drafts]
    finally:
        assert hz(world.home.root, "daemon", "stop").returncode == 0
    assert wired == embedded
    by_name = {review.heinzel_name: review for review in embedded}
    notes = by_name["notes-digest"]
    assert notes.approved_text is not None and "shipped fuzzy search" in notes.approved_text
    assert "shipped fuzzy search" not in notes.placed_text
    assert notes.approved_note is None and notes.approved_key != notes.key
    lines = world.document("notes-digest").read_text().splitlines()
    assert notes.line is not None and lines[notes.line - 1] == notes.current_text.splitlines()[0]
    fresh = by_name["fresh-digest"]
    assert fresh.approved_text is None and fresh.approved_note == NEVER_APPROVED
