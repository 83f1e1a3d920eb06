"""issue 14, the review desk after a new user's first session: the defects they found, pinned.

Pilot over a real embedded kernel and real documents (``worlds``), as in
``test_review_desk``; each test names the defect it keeps fixed.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from hz_kernel import remote
from hz_kernel.client import LocalClient
from hz_kernel.daemon.protocol import Discovery
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.review import ReviewScreen
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.key_bar import KeyBar
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, text_of, until
from tests.tui.test_remote import daemon  # noqa: F401 (a fixture)
from tests.tui.test_review_desk import client_for, open_desk, pane_text
from tests.tui.test_review_snapshots import cockpit as pictured
from tests.tui.test_review_snapshots import desk, world_root  # noqa: F401 (fixtures)
from tests.tui.test_review_snapshots import open_desk as pictured_desk

NOW = "2026-12-01T09:00:00+00:00"
WIDE = (200, 50)


@pytest.fixture
def clock(pinned_clock: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The full-colour terminal of every cockpit test, the clock at ``NOW``."""
    monkeypatch.setenv("HZ_NOW", NOW)


@pytest.fixture
async def redrafted(tmp_path: Path, clock: None) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
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
    draft's: with two lines added at the top of the draft, an unchanged line reads 4 on the
    left and 6 on the right."""
    world, client = redrafted
    document = world.document("notes-digest")
    document.write_text(document.read_text().replace("3 items", "one\ntwo\n3 items"))
    async with CockpitApp(world.home, client).run_test(size=WIDE) as pilot:
        screen = await open_desk(pilot, 1)
        shown = pane_text(screen)
        cells = [cell.strip() for cell in row_with(shown, "- fixed the login bug")]
        assert cells == ["4", "- fixed the login bug", "6", "- fixed the login bug"], shown
        added = [cell.strip() for cell in row_with(shown, "two")]
        assert added == ["2 +", "two"], shown  # one side only: the old side's cells are blank


@pytest.fixture
async def one_draft(tmp_path: Path, clock: None) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    world = await worlds.build(tmp_path, ("notes-digest",))
    client = await client_for(world)
    try:
        yield world, client
    finally:
        await client.close()


def key_bar(screen: ReviewScreen) -> set[str]:
    """The descriptions the key bar offers (before it drops any for width)."""
    return {key.description for key in screen.query_one(KeyBar).keys}


async def test_issue14_item3_an_empty_queue_offers_no_draft_actions(
    one_draft: tuple[worlds.World, LocalClient],
) -> None:
    """ "nothing waits for review" with "a Approve  x Reject  space Select" under it: the
    draft actions leave the key bar (and do nothing) while no draft is shown; Back stays."""
    world, client = one_draft
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 1)
        draft_keys = {"Approve", "Reject", "Select", "Diff base", "Markdown", "Edit in $EDITOR"}
        assert draft_keys <= key_bar(screen)
        await pilot.press("a")
        await until(lambda: screen.queue.row_count == 0)
        await pilot.pause()
        status = text_of(screen.query_one("#review-status", Static))
        assert "nothing waits for review" in status
        assert "switches" not in status, "no draft, no view of one to switch"
        assert not draft_keys & key_bar(screen), key_bar(screen)
        assert "Back" in key_bar(screen)
        notices = len(app.notices.history)
        await pilot.press("x", "space", "e")
        await pilot.pause()
        assert len(app.notices.history) == notices  # no "No draft is selected." either


async def test_issue14_item3_markdown_mode_says_it_is_on_and_keeps_the_header(
    redrafted: tuple[worlds.World, LocalClient],
) -> None:
    """``d`` (Markdown) showed the rendered draft with no header and a status line still reading
    "diff … (b switches)". The status names the mode, the header (heinzel, document, file,
    how the draft stands) stays; ``d`` again returns to the diff."""
    world, client = redrafted
    async with CockpitApp(world.home, client).run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 1)
        status = screen.query_one("#review-status", Static)
        assert "diff since last approved (b switches)" in text_of(status)
        await pilot.press("d")
        await until(lambda: screen.query_one(DiffView).markdown.display)
        await pilot.pause()
        assert "the draft as Markdown (d returns to the diff)" in text_of(status)
        assert "b switches" not in text_of(status)
        header = pane_text(screen)
        assert "notes-digest" in header and str(world.document("notes-digest")) in header
        assert "unchanged since it was placed" in header and "the draft as Markdown" in header
        await pilot.press("d")
        await until(lambda: not screen.query_one(DiffView).markdown.display)
        assert "diff since last approved (b switches)" in text_of(status)
        assert "since last approved (2026-12-01)" in pane_text(screen)


def test_issue14_item3_markdown_mode_pictured(
    snap_compare,
    desk: tuple[Home, LocalClient],  # noqa: F811 (the fixture imported above)
) -> None:
    """The rendered draft under its header, the status line naming the mode."""
    home, client = desk

    async def markdown(pilot: Pilot[int]) -> None:
        await pictured_desk(pilot)
        await pilot.press("d")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(pictured(home, client), terminal_size=SIZE, run_before=markdown)


def drawn_rows(screen: ReviewScreen) -> list[str]:
    """The pane's text as drawn at its own width (so long lines wrap as on screen)."""
    pane = screen.query_one(DiffView).query_one("#diff-text", Static)
    console = Console(width=pane.content_size.width, file=io.StringIO(), record=True)
    console.print(pane.content)
    return console.export_text().splitlines()


async def test_issue14_item1_at_80_columns_a_wrapped_diff_line_hangs_after_the_gutter(
    redrafted: tuple[worlds.World, LocalClient],
) -> None:
    """At 80 columns the diff's long lines wrap; their continuation started at column 0,
    under the line numbers. It now hangs after the gutter, as each side does at 240."""
    world, client = redrafted
    document = world.document("notes-digest")
    long = "- shipped search across every note, tag and heading of the whole notebook at once"
    document.write_text(document.read_text().replace("- shipped search", long))
    async with CockpitApp(world.home, client).run_test(size=(80, 24)) as pilot:
        screen = await open_desk(pilot, 1)
        rows = drawn_rows(screen)
        start = next(n for n, row in enumerate(rows) if row.startswith("   5 + "))
        gutter = len("   5 + ")
        assert rows[start + 1].strip() and rows[start + 1][:gutter] == " " * gutter, rows
        joined = " ".join(row[gutter:].strip() for row in rows[start : start + 3])
        assert long in joined, rows


def test_issue14_item1_review_desk_at_80_columns_pictured(
    snap_compare,
    desk: tuple[Home, LocalClient],  # noqa: F811 (the fixture imported above)
) -> None:
    """The queue hidden (n walks the drafts), the unified diff (a grid: gutter, then text) the
    whole width."""
    home, client = desk
    assert snap_compare(pictured(home, client), terminal_size=(80, 24), run_before=pictured_desk)


async def test_issue14_item3_an_edit_outside_hz_shows_on_the_desk_without_enter(
    redrafted: tuple[worlds.World, LocalClient],
) -> None:
    """The desk kept "no edits" after the draft was edited in another editor until Enter;
    it watches the shown draft's document and shows the edit as the file changes (saved in
    place, then saved as editors do: a new file renamed over the old)."""
    world, client = redrafted
    document = world.document("notes-digest")
    async with CockpitApp(world.home, client).run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 1)
        await pilot.press("b")
        await until(lambda: "no edits" in pane_text(screen))
        document.write_text(document.read_text().replace("login bug", "login crash"))
        await until(lambda: "+ - fixed the login crash" in pane_text(screen))
        assert "you edited it since it was placed" in pane_text(screen)
        saved = document.with_name(".notes-digest.md.swp")
        saved.write_text(document.read_text().replace("login crash", "login outage"))
        saved.replace(document)
        await until(lambda: "+ - fixed the login outage" in pane_text(screen))


async def test_issue14_item3_a_remote_desk_shows_an_edit_on_the_next_tick(
    daemon: tuple[worlds.World, int],  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attached with ``--connect`` the cockpit has no file to watch: the ticker asks
    ``draft.review`` again for the shown draft, so an edit on the daemon's machine shows."""
    world, _ = daemon
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    found = Discovery.model_validate_json(world.home.discovery_path.read_bytes())
    client = await remote.attach(found.address, found.token)
    host, port = remote.check_url(found.address)
    app = CockpitApp(remote.connection_home(host, port), client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_desk(pilot, 1)
            await pilot.press("b")
            await until(lambda: "no edits" in pane_text(screen))
            document = world.document("notes-digest")
            document.write_text(document.read_text().replace("login bug", "login crash"))
            await pilot.pause(0.5)
            assert "no edits" in pane_text(screen)  # nothing watches the file here
            app.ticker.tick()
            await until(lambda: "+ - fixed the login crash" in pane_text(screen))
    finally:
        await client.close()
