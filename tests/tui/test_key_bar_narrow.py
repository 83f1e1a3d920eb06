"""At 80×24 every key that matters on a main screen stays on its key bar (attack pass, s5).

The globals (F2, F4, Ctrl+Q, Ctrl+P) are in F1 and the palette: on a narrow
bar they give way to the screen's own keys, and long labels shorten first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hz_kernel.client import LocalClient
from hz_tui.app import CockpitApp
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.review import ReviewScreen
from hz_tui.screens.transcript import TranscriptScreen
from hz_tui.widgets.timeline import Timeline
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import open_page, until
from tests.tui.test_terminals import key_bar_text

NOW = "2026-12-01T09:00:00+00:00"
THREE = ("notes-digest", "team-digest", "ops-digest")


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> worlds.World:
    monkeypatch.setenv("HZ_NOW", NOW)
    return await worlds.build(tmp_path, THREE)


@pytest.fixture
async def client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as opened:
        yield opened


#: The keys that matter on each main screen, as an 80-column bar shows them.
HOME_KEYS = ("⏎ Open", "s Sort", "/ Filter", "^n New", "a Approve", "w Wake", "f2 Kernel")
PAGE_KEYS = ("esc Back", "i Message", "y Answer", "t Retry", "v Contract", "m Chat", "a Approve")
PAGE_KEYS += ("w Wake",)
TRANSCRIPT_KEYS = ("esc Back", "/ Search", "n Next", "N Prev")
DESK_KEYS = ("a Approve", "x Reject", "␣ Mark", "b Base", "d Markdown", "/ Filter", "e Edit")
DESK_KEYS += ("esc Back",)


def assert_on_bar(app: CockpitApp, keys: tuple[str, ...]) -> None:
    bar = key_bar_text(app)
    assert [key for key in keys if key not in bar] == [], bar
    assert "f1 Help" in bar, bar


async def test_at_80x24_every_main_screen_keeps_its_own_keys_on_the_key_bar(
    world: worlds.World, client: LocalClient
) -> None:
    """Attack pass (s5): at 80×24 the home keeps s and F2 (and F4), the heinzel page m, w
    and t, the transcript its search keys, the review desk every draft key; F1 everywhere."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        assert_on_bar(app, (*HOME_KEYS, "f4 Review"))
        page = await open_page(pilot, world.ids["notes-digest"])
        await until(lambda: page.query_one(Timeline).row_count > 0)
        await pilot.pause()
        assert_on_bar(app, PAGE_KEYS)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, TranscriptScreen))
        await pilot.pause()
        assert_on_bar(app, TRANSCRIPT_KEYS)
        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, HeinzelScreen))
        await pilot.press("f4")
        await until(lambda: isinstance(app.screen, ReviewScreen))
        desk = app.screen
        assert isinstance(desk, ReviewScreen)
        await until(lambda: desk.queue.row_count == 3 and desk.review is not None)
        await pilot.pause()
        assert_on_bar(app, DESK_KEYS)
