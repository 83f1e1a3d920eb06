"""issue 14 item 3, the review desk, driven with Pilot over a real embedded kernel.

Real drafts in real documents: the default diff is against the section's
last approved text, ``b`` switches to the draft as placed, changed words are
marked; space and ``A`` approve a batch; ``x`` holds a rejection that ``u``
takes back (or that is sent once, when the window ends or the desk closes);
retiring asks first.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Group
from rich.table import Table
from rich.text import Text

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME
from hz_tui.app import CockpitApp
from hz_tui.diffing import Block
from hz_tui.held_rejects import HeldRejects
from hz_tui.review import MARK
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.review import ReviewScreen
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.heinzel_table import HeinzelTable
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, text_of, until

NOW = "2026-12-01T09:00:00+00:00"
THREE = ("notes-digest", "team-digest", "ops-digest")


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


async def client_for(world: worlds.World) -> LocalClient:
    """The kernel as ``hz`` embeds it in the cockpit: long-lived, turns in the background."""
    return LocalClient(await Kernel.open(world.home, long_lived=True))


@pytest.fixture
async def redrafted(tmp_path: Path) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    world = await worlds.build_redrafted(tmp_path)
    client = await client_for(world)
    try:
        yield world, client
    finally:
        await client.close()


@pytest.fixture
async def three(tmp_path: Path) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    world = await worlds.build(tmp_path, THREE)
    client = await client_for(world)
    try:
        yield world, client
    finally:
        await client.close()


def pane_text(screen: ReviewScreen) -> str:
    return text_of(screen.query_one(DiffView).query_one("#diff-text"))  # type: ignore[arg-type]


def marked_words(screen: ReviewScreen) -> list[str]:
    """The words the pane shows in reverse video (the word-level marks), as drawn."""
    content = screen.query_one(DiffView).query_one("#diff-text").content  # type: ignore[attr-defined]
    assert isinstance(content, Group)
    body = content.renderables[-1]
    assert isinstance(body, Group)
    grid = body.renderables[-1]
    assert isinstance(grid, Table)
    lines = [cell for cell in grid.columns[1].cells if isinstance(cell, Text)]
    return [
        line.plain[s.start : s.end]
        for line in lines
        for s in line.spans
        if MARK.reverse and "reverse" in str(s.style)
    ]


async def open_desk(pilot, count: int) -> ReviewScreen:
    await pilot.app.loaded.wait()
    await pilot.press("f4")
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen)
    await until(lambda: screen.queue.row_count == count and screen.shown is not None)
    return screen


def rejections(world: worlds.World, name: str) -> int:
    spine = world.home.heinzel_dir(world.ids[name]) / SPINE_NAME
    return sum(1 for e in scan_file(spine).events if e.kind == "draft.rejected")


def hold_in_a_process_that_ends(home: Home, *held: tuple[str, str]) -> None:
    """Rejections held (``HeldRejects.hold``) by another process, which then exits."""
    pairs = [part for pair in held for part in pair]
    subprocess.run([sys.executable, "-c", HOLD, str(home.root), *pairs], check=True, timeout=60)


HOLD = """
import sys
from hz_kernel.home import Home
from hz_tui.held_rejects import HeldRejects
held = HeldRejects(Home.resolve(sys.argv[1]))
for key, name in zip(sys.argv[2::2], sys.argv[3::2]):
    held.hold(key, name)
"""


async def pending(client: LocalClient) -> set[str]:
    return {d.heinzel_name or "" for d in (await client.call(ops.DRAFTS, ops.Empty())).items}


async def test_issue14_item3_the_default_diff_is_since_last_approved_and_b_shows_your_edits(
    redrafted: tuple[worlds.World, LocalClient],
) -> None:
    world, client = redrafted
    document = world.document("notes-digest")
    async with CockpitApp(world.home, client).run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 1)
        assert screen.base == "approved"
        shown = pane_text(screen)
        assert "since last approved (2026-12-01)" in shown
        assert "- - shipped fuzzy search" in shown and "+ - shipped search" in shown
        assert "fuzzy" in marked_words(screen)  # the word you added then, marked
        changed = [p for p in screen.shown.parts if isinstance(p, Block) and p.changed]
        old = next(line for block in changed for line in block.old if "fuzzy" in line.text)
        assert [old.text[a:b] for a, b in old.marks] == ["fuzzy"]

        # You edit the new draft: "b" shows your edits against the draft as placed.
        document.write_text(document.read_text().replace("login bug", "login crash"))
        await pilot.press("b")
        await pilot.press("enter")
        await until(lambda: "your edits" in pane_text(screen) and "crash" in pane_text(screen))
        shown = pane_text(screen)
        assert "- - fixed the login bug" in shown and "+ - fixed the login crash" in shown
        assert marked_words(screen) == ["bug", "crash"]
        await pilot.press("b")
        await until(lambda: "since last approved" in pane_text(screen))
        await pilot.press("d")
        await until(lambda: screen.query_one(DiffView).markdown.display)
        assert screen.shown is None


async def test_issue14_item3_side_by_side_when_the_terminal_is_wide(
    redrafted: tuple[worlds.World, LocalClient],
) -> None:
    world, client = redrafted
    async with CockpitApp(world.home, client).run_test(size=(200, 50)) as pilot:
        screen = await open_desk(pilot, 1)
        shown = pane_text(screen)
        heading = next(line for line in shown.splitlines() if "this draft" in line)
        assert "last approved" in heading  # the two sides' labels on one line
        row = next(line for line in shown.splitlines() if "shipped fuzzy search" in line)
        assert "shipped search" in row.replace("shipped fuzzy search", "")


async def test_issue14_item3_batch_approve_of_the_selected_drafts(
    three: tuple[worlds.World, LocalClient],
) -> None:
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        names = [d.heinzel_name for d in screen.queue.drafts]
        await pilot.press("space", "j", "j", "space")
        assert len(screen.queue.selected) == 2
        await pilot.press("A")
        await until(lambda: screen.queue.row_count == 1)
        lines = [n.message for n in app.notices.history][-1].splitlines()
        assert lines == [f"✓ {names[0]}: draft approved", f"✓ {names[2]}: draft approved"]
    assert await pending(client) == {names[1]}
    for name in (names[0], names[2]):
        assert worlds.TAG not in world.document(name).read_text()


async def test_issue14_item3_filter_narrows_the_queue(
    three: tuple[worlds.World, LocalClient],
) -> None:
    world, client = three
    async with CockpitApp(world.home, client).run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        await pilot.press("slash", *"team")
        await until(lambda: screen.queue.row_count == 1)
        assert screen.queue.drafts[0].heinzel_name == "team-digest"
        await pilot.press("backspace", "backspace", "backspace", "backspace", *"nobody")
        await until(lambda: "No draft matches the filter" in pane_text(screen))
        await pilot.press("escape")
        assert screen.queue.has_focus


async def test_issue14_item3_undo_of_a_reject_leaves_the_draft_pending(
    three: tuple[worlds.World, LocalClient],
) -> None:
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600  # the window stays open for as long as the test needs
        name = screen.queue.drafts[0].heinzel_name
        await pilot.press("x")
        await until(lambda: screen.queue.row_count == 2)
        assert [h.name for h in HeldRejects(world.home).load()] == [name]
        await pilot.press("u")
        await until(lambda: screen.queue.row_count == 3)
        assert HeldRejects(world.home).load() == []
        assert any("reject undone" in n.message for n in app.notices.history)
        await pilot.press("escape")  # leaving the desk sends nothing: nothing is held
    assert await pending(client) == set(THREE)
    assert rejections(world, name or "") == 0
    assert "hz:begin" in world.document(name or "").read_text()


async def test_attack_keys_on_a_queue_emptied_by_rejects_keep_the_desk_and_the_undo(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """Moving in a queue the rejects emptied (a highlight with no row) neither crashes the
    desk nor loses a held reject: ``u`` still restores the last one."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600
        for left in (2, 1, 0):
            await pilot.press("x")
            await until(lambda left=left: screen.queue.row_count == left)
        await pilot.press("pageup", "up", "down", "pagedown", "home", "end")
        await pilot.pause()
        assert app.screen is screen and len(HeldRejects(world.home).load()) == 3
        await pilot.press("u")
        await until(lambda: screen.queue.row_count == 1)
        await pilot.press("escape")  # the two still held are sent as the desk closes
    assert len(await pending(client)) == 1


async def test_issue14_item3_a_reject_not_undone_is_sent_once(
    three: tuple[worlds.World, LocalClient],
) -> None:
    world, client = three
    async with CockpitApp(world.home, client).run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 0.05
        name = screen.queue.drafts[0].heinzel_name or ""
        await pilot.press("x")
        await until(lambda: name not in (d.heinzel_name for d in screen.queue.listed))
        await until(lambda: not HeldRejects(world.home).load())
        await pilot.press("u")  # too late: nothing to undo
    assert await pending(client) == set(THREE) - {name}
    assert rejections(world, name) == 1
    assert "hz:begin" not in world.document(name).read_text()


async def test_issue14_item3_quitting_inside_the_undo_window_sends_the_reject_once(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """Also pins the index reader: a read the desk cancelled mid-statement (a stale queue
    reload) no longer leaves the embedded kernel listing the rejected draft as pending."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600
        name = screen.queue.drafts[0].heinzel_name or ""
        await pilot.press("x")
        await until(lambda: screen.queue.row_count == 2)
        await pilot.press("ctrl+q")
    assert await pending(client) == set(THREE) - {name}
    assert rejections(world, name) == 1
    assert HeldRejects(world.home).load() == []


async def test_issue14_item3_a_reject_held_when_the_cockpit_died_is_sent_at_the_next_start(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """A crash inside the window: the held file survives; the next cockpit sends it, once,
    and drops one whose draft was decided meanwhile (approved in the document here).
    The rejections are held by a process that has ended, as a cockpit that died."""
    world, client = three
    drafts = {d.heinzel_name: d for d in (await client.call(ops.DRAFTS, ops.Empty())).items}
    held = HeldRejects(world.home)
    hold_in_a_process_that_ends(
        world.home,
        (drafts["notes-digest"].key, "notes-digest"),
        (drafts["team-digest"].key, "team-digest"),
    )
    await client.call(ops.APPROVE, ops.ApproveRequest(ref=drafts["team-digest"].key))
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE):
        await app.loaded.wait()
        await until(lambda: not held.load())
        await until(
            lambda: any(n.message == "notes-digest: draft rejected" for n in app.notices.history)
        )
    assert await pending(client) == {"ops-digest"}
    assert rejections(world, "notes-digest") == 1
    assert rejections(world, "team-digest") == 0
    assert "shipped search" in world.document("team-digest").read_text()


async def test_issue14_item3_retire_asks_first(three: tuple[worlds.World, LocalClient]) -> None:
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause(0.2)
        table = app.get_home().query_one(HeinzelTable)
        heinzel = world.ids["ops-digest"]
        table.move_cursor(row=table.position[heinzel])
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.rows[heinzel].state != "retired"
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")  # Enter alone picks Cancel: nothing is destroyed by it
        await pilot.pause(0.2)
        assert app.rows[heinzel].state != "retired"
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(lambda: app.rows[heinzel].state == "retired")
