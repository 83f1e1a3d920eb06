"""issue 14, the review desk after a new user's first session: the defects they found, pinned.

Pilot over a real embedded kernel and real documents (``worlds``), as in
``test_review_desk``; each test names the defect it keeps fixed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hz_kernel.client import LocalClient
from hz_tui.app import CockpitApp
from tests.tui import worlds
from tests.tui.test_review_desk import client_for, open_desk, pane_text

NOW = "2026-12-01T09:00:00+00:00"
WIDE = (200, 50)


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


@pytest.fixture
async def redrafted(tmp_path: Path) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    world = await worlds.build_redrafted(tmp_path)
    client = await client_for(world)
    try:
        yield world, client
    finally:
        await client.close()


def row_with(shown: str, text: str) -> list[str]:
    """The cells of the pane's row that shows ``text`` (split on runs of spaces)."""
    line = next(line for line in shown.splitlines() if text in line)
    return [cell for cell in line.split("  ") if cell.strip()]


async def test_issue14_item3_the_last_approved_side_numbers_its_own_lines(
    redrafted: tuple[worlds.World, LocalClient],
) -> None:
    """Side by side, the "last approved" column numbers the approved text's lines, not the
    draft's: with two lines added at the top of the draft, an unchanged line reads 5 on the
    left and 7 on the right."""
    world, client = redrafted
    document = world.document("notes-digest")
    document.write_text(document.read_text().replace("3 items", "one\ntwo\n3 items"))
    async with CockpitApp(world.home, client).run_test(size=WIDE) as pilot:
        screen = await open_desk(pilot, 1)
        shown = pane_text(screen)
        cells = [cell.strip() for cell in row_with(shown, "- fixed the login bug")]
        assert cells == ["5", "- fixed the login bug", "7", "- fixed the login bug"], shown
        added = [cell.strip() for cell in row_with(shown, "two")]
        assert added == ["3 +", "two"], shown  # one side only: the old side's cells are blank
