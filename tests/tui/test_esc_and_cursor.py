"""Esc clears a filter in one press, and the review desk's cursor stays where the user
expects (attack pass, s5). Pilot over real embedded kernels."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.home import HomeScreen
from hz_tui.widgets.queue_filter import QueueFilter
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE, table_of, until
from tests.tui.test_review_desk import open_desk

NOW = "2026-12-01T09:00:00+00:00"
LATER = "2026-12-01T09:05:00+00:00"
THREE = ("notes-digest", "team-digest", "ops-digest")


@pytest.fixture
async def three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    monkeypatch.setenv("HZ_NOW", NOW)
    world = await worlds.build(tmp_path, THREE)
    async with embedded_client(world) as client:
        yield world, client


async def test_one_escape_clears_the_home_filter_and_a_second_does_what_escape_does_there(
    cockpit_home: Home, client: LocalClient
) -> None:
    """The empty table's hint says Esc clears the filter: one Esc from the filter line clears
    it (it took two); Enter still keeps it, and Esc on the table then clears it."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        home = app.screen
        assert isinstance(home, HomeScreen)
        table = table_of(app)
        every = len(table.order)
        await pilot.press("slash", *"nomatch")
        await until(lambda: not table.order)
        assert "Esc clears the filter" in str(home.query_one("#empty").render())
        await pilot.press("escape")
        await until(lambda: len(table.order) == every)
        assert home.filter_bar.value == "" and table.has_focus
        assert not home.filter_bar.has_class("-active")
        await pilot.press("escape")  # nothing to clear: the home stays, the table keeps the keys
        await pilot.pause()
        assert app.screen is home and table.has_focus
        await pilot.press("slash", *"digest", "enter")
        await until(lambda: table.has_focus and len(table.order) < every)
        assert home.filter_bar.value == "digest"
        await pilot.press("escape")
        await until(lambda: len(table.order) == every)


async def test_escape_clears_the_review_desks_filter_before_it_leaves_the_desk(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """From the filter line, or from the queue after Enter, the first Esc clears the desk's
    filter (the queue lists every draft again); the next one leaves the desk."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        bar = screen.query_one(QueueFilter)
        await pilot.press("slash", *"team")
        await until(lambda: screen.queue.row_count == 1)
        await pilot.press("escape")
        await until(lambda: screen.queue.row_count == 3)
        assert bar.value == "" and screen.queue.has_focus and not bar.display
        assert app.screen is screen
        await pilot.press("slash", *"team", "enter")
        await until(lambda: screen.queue.row_count == 1 and screen.queue.has_focus)
        await pilot.press("escape")
        await until(lambda: screen.queue.row_count == 3)
        assert app.screen is screen and bar.value == ""
        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, HomeScreen))


async def test_undo_puts_the_cursor_on_the_restored_draft(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """``u`` brings a held reject back into the queue and the cursor lands on that draft
    (its diff is the one shown), not on the draft that was next."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600  # the window stays open for as long as the test needs
        await pilot.press("j")
        rejected = screen.queue.cursor_key()
        assert rejected is not None
        await pilot.press("x")
        await until(lambda: screen.queue.row_count == 2)
        assert screen.queue.cursor_key() != rejected
        await pilot.press("u")
        await until(lambda: screen.queue.row_count == 3)
        await until(lambda: screen.review is not None and screen.review.key == rejected)
        assert screen.queue.cursor_key() == rejected


async def test_j_and_k_stop_at_the_ends_of_the_queue_and_n_wraps(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """``k`` on the first draft stays there and ``j`` on the last stays there (as Up/Down do);
    ``n`` and ``N`` go round, as a search's next and previous do."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        queue = screen.queue
        assert queue.cursor_row == 0
        await pilot.press("k")
        assert queue.cursor_row == 0
        await pilot.press("j", "j", "j", "j")
        assert queue.cursor_row == 2
        await pilot.press("n")
        assert queue.cursor_row == 0
        await pilot.press("N")
        assert queue.cursor_row == 2


async def test_the_cursor_follows_its_draft_when_it_re_lands_later_in_the_queue(
    three: tuple[worlds.World, LocalClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A heinzel drafting its section again re-lands the draft under a new key, last in the
    queue: the cursor goes with it, not to the draft moved up into its row, so ``a`` then
    approves the draft the user was reading."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        queue = screen.queue
        await pilot.press("j")
        read = queue.draft(queue.cursor_key())
        assert read is not None and read.heinzel_name == "team-digest"
        monkeypatch.setenv("HZ_NOW", LATER)
        world.add_note("wednesday.md", "# Wednesday\n- shipped the cart\n")
        await client.call(ops.WAKE, ops.WakeRequest(ref="team-digest"))
        await until(lambda: [d.heinzel_name for d in queue.drafts][-1] == "team-digest")
        relanded = queue.draft(queue.cursor_key())
        assert relanded is not None and relanded.heinzel_name == "team-digest"
        assert relanded.key != read.key and queue.cursor_row == 2
        await until(lambda: screen.review is not None and screen.review.key == relanded.key)
        await pilot.press("a")
        await until(lambda: queue.row_count == 2)
        left = await client.call(ops.DRAFTS, ops.Empty())
        assert {d.heinzel_name for d in left.items} == {"notes-digest", "ops-digest"}


async def test_the_cursor_stays_on_its_draft_when_the_desk_is_resized(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """A new width lays the queue's columns out again; the cursor stays on its draft."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        await pilot.press("j", "j")
        read = screen.queue.cursor_key()
        await pilot.resize_terminal(SIZE[0] - 20, SIZE[1])
        await pilot.pause()
        assert screen.queue.cursor_key() == read
