"""issue 14 item 2 and 7, transcripts and the timeline after a new user's first session.

A real long-lived embedded kernel runs a digest turn with the offline local
model; the cockpit opens its transcript as a user does (Enter on the
timeline), at the tester's 120×40.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual.pilot import Pilot

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import StepDone, TurnResumed, TurnStarted, TurnWaiting
from hz_tui.app import CockpitApp
from hz_tui.screens.transcript import TranscriptScreen
from hz_tui.widgets.timeline import Timeline
from hz_tui.widgets.transcript_view import TranscriptView
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE, open_page, until
from tests.tui.test_transcript import open_transcript, settled, shown
from tests.tui.test_transcript_snapshot import transcript_home  # noqa: F401 (a fixture)


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> worlds.World:
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00+00:00")
    return worlds.make_world(tmp_path)


@pytest.fixture
async def client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as opened:
        yield opened


def rows_drawn(view: TranscriptView) -> list[str]:
    """The text of every row the view draws, as its strips carry it."""
    return [view.lines[n].text[start:end] for n, start, end in view.rows]


async def test_issue14_item2_a_transcript_first_opened_wraps_inside_its_scrollbar(
    world: worlds.World, client: LocalClient
) -> None:
    """The first layout wrapped at the width without the vertical scrollbar, so the
    scrollbar hid each long row's last letters ("editing it i" / "place.") until a search
    wrapped again. Every row now fits the width the scrollbar leaves, and a row's drawn
    strip holds its whole text."""
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest")
    turn = await settled(client, heinzel, 1)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        page = await open_page(pilot, heinzel)
        screen = await open_transcript(pilot, page, turn)
        view = screen.view
        await pilot.pause()
        assert view.show_vertical_scrollbar
        width = view.scrollable_content_region.width
        assert max(cell_len(row) for row in rows_drawn(view)) > width - 10  # rows fill it
        assert all(cell_len(row) <= width for row in rows_drawn(view))
        for y in range(view.scrollable_content_region.height):
            number, start, end = view.rows[round(view.scroll_offset.y) + y]
            drawn = view.render_line(y).text.rstrip()
            assert drawn == view.lines[number].text[start:end].rstrip()


def test_issue14_item2_a_transcript_pictured_as_it_first_opens(
    snap_compare,
    transcript_home: tuple[Home, str],  # noqa: F811 (the fixture imported above)
) -> None:
    """The picture before any search, at the top (the context's framing): long rows wrap
    inside the scrollbar."""
    home, heinzel = transcript_home
    client = asyncio.run(LocalClient.open(home))

    async def opened(pilot: Pilot[int]) -> None:
        app = pilot.app
        await app.loaded.wait()  # type: ignore[attr-defined]
        app.push_screen(TranscriptScreen(heinzel))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        while not screen.model.loaded:
            await pilot.pause(0.05)
        screen.view.focus()
        await pilot.press("home")  # the context's framing, as the tester read it
        await pilot.pause()

    try:
        app = CockpitApp(home, client, live=False)
        app.theme = "hz-dark"
        assert snap_compare(app, terminal_size=SIZE, run_before=opened)
    finally:
        asyncio.run(client.close())


async def test_issue14_item7_the_transcript_counts_one_model_call_in_the_singular(
    world: worlds.World, client: LocalClient
) -> None:
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest")
    turn = await settled(client, heinzel, 1)
    async with CockpitApp(world.home, client).run_test(size=SIZE) as pilot:
        page = await open_page(pilot, heinzel)
        screen = await open_transcript(pilot, page, turn)
        cost = shown(screen.view, "cost")
        assert "in 1 model call" in cost and "call(s)" not in cost and "1 model calls" not in cost


async def test_issue14_item7_the_timeline_and_the_live_panel_name_the_same_step(
    home: Home, pinned_clock: None
) -> None:
    """A running turn that finished gather is thinking: the timeline's row said "gather…"
    (the kernel's last step done) while the live panel said "● think". Both now name the
    step under way, also for a turn woken from a wait (it thinks again: not "finish…")."""
    kernel = await Kernel.open(home)
    client = LocalClient(kernel)
    try:
        heinzel = await kernel.create_heinzel("followed")
        turn = "01JC0CKP1T0000000100000001"

        async def add(*payloads: object) -> None:
            for payload in payloads:
                await kernel.append(heinzel, payload, turn=turn)  # type: ignore[arg-type]

        app = CockpitApp(home, client)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, heinzel)
            timeline = page.query_one(Timeline)

            def steps() -> tuple[str | None, str]:
                if turn not in timeline.rows:
                    return page.turn_panel.live.step, ""
                return page.turn_panel.live.step, timeline.get_cell(turn, "outcome").plain

            await add(TurnStarted(cause="asked", keys=["k"], contract_version=1))
            await add(StepDone(step="gather"))
            await until(lambda: steps() == ("think", "think…"))
            await add(StepDone(step="think"), StepDone(step="outcome"), StepDone(step="act"))
            await add(TurnWaiting(step="act"))
            await until(lambda: steps()[1] == "waiting")
            await add(TurnResumed(woken_by="timer", resumes=1))
            await until(lambda: steps() == ("think", "think…"))
    finally:
        await client.close()
