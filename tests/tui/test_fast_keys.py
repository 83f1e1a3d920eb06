"""Keys that arrive together (tmux ``send-keys``, a fast typist) act in the order they came in
the filter lines: Backspace ran only once it had bubbled to the app, after the characters
typed behind it were in, so ``zzz``, three Backspaces and ``notes`` read as ``zzzno``.
Pilot over real embedded kernels, the keys posted with no pause between them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.home import HomeScreen
from hz_tui.widgets.queue_filter import QueueFilter
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE
from tests.tui.test_review_desk import open_desk

NOW = "2026-12-01T09:00:00+00:00"
#: Three Backspaces over ``zzz``, then a word: what a burst from the terminal delivers.
BURST = ("backspace", "backspace", "backspace", *"notes")


@pytest.fixture
async def three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    monkeypatch.setenv("HZ_NOW", NOW)
    world = await worlds.build(tmp_path, ("notes-digest", "team-digest", "ops-digest"))
    async with embedded_client(world) as client:
        yield world, client


async def burst(pilot, field: Input, keys: tuple[str, ...]) -> None:
    """Post ``keys`` as the terminal driver does, all at once, then let every one land."""
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(pilot.app)
        pilot.app._driver.send_message(event)
    for _ in range(len(keys)):
        await pilot.pause()
    assert field.has_focus


async def test_a_burst_of_keys_in_the_home_filter_lands_in_order(
    cockpit_home: Home, client: LocalClient
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        home = app.screen
        assert isinstance(home, HomeScreen)
        await pilot.press("slash", *"zzz")
        await burst(pilot, home.filter_bar, BURST)
        assert home.filter_bar.value == "notes"


async def test_a_burst_of_keys_in_the_review_desks_filter_lands_in_order(
    three: tuple[worlds.World, LocalClient],
) -> None:
    world, client = three
    async with CockpitApp(world.home, client).run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        await pilot.press("slash", *"zzz")
        bar = screen.query_one(QueueFilter)
        await burst(pilot, bar, BURST)
        assert bar.value == "notes"
        assert [draft.heinzel_name for draft in screen.queue.drafts] == ["notes-digest"]
