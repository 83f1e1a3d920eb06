"""Every cockpit screen, pictured: dark and light at 120×40, the home also at 80×24.

The pictures pin the pid on the kernel page and ``HZ_NOW`` everywhere; the
live turn's body is read on a timer, so its page is pictured after a pause.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_tui import composer_store
from hz_tui.app import CockpitApp
from hz_tui.composer_store import ComposerState
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.review import ReviewScreen
from tests.tui import homes

THEMES = ["hz-dark", "hz-light"]


def cockpit(home: Home, client: LocalClient, theme: str) -> CockpitApp:
    app = CockpitApp(home, client, live=False)
    app.theme = theme
    return app


async def loaded(pilot: Pilot[int]) -> None:
    await pilot.app.loaded.wait()  # type: ignore[attr-defined]
    await pilot.pause()


def then(*steps: Callable[[Pilot[int]], object]) -> Callable[[Pilot[int]], object]:
    async def run(pilot: Pilot[int]) -> None:
        await loaded(pilot)
        for step in steps:
            result = step(pilot)
            if hasattr(result, "__await__"):
                await result  # type: ignore[misc]
            await pilot.pause()

    return run


async def open_weekly(pilot: Pilot[int]) -> None:
    pilot.app.push_screen(HeinzelScreen(homes.heinzel_id(1)))
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, HeinzelScreen)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("theme", THEMES)
def test_home(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    assert snap_compare(cockpit(home, client, theme), terminal_size=(120, 40), run_before=loaded)


def test_home_small_terminal(snap_compare, snapshot_client) -> None:
    home, client = snapshot_client
    assert snap_compare(cockpit(home, client, "hz-dark"), terminal_size=(80, 24), run_before=loaded)


@pytest.mark.parametrize("theme", THEMES)
def test_heinzel_page(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_weekly))


async def open_contract(pilot: Pilot[int]) -> None:
    await pilot.press("v")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()


@pytest.mark.parametrize("theme", THEMES)
def test_contract_page(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_weekly, open_contract))


async def press_f2(pilot: Pilot[int]) -> None:
    await pilot.press("f2")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()


@pytest.mark.parametrize("theme", THEMES)
def test_kernel_page(snap_compare, snapshot_client, theme: str, monkeypatch) -> None:
    # The page shows this process's pid; pin it so the picture does not change per run.
    monkeypatch.setattr("hz_kernel.client.os.getpid", lambda: 4242)
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=then(press_f2))


@pytest.mark.parametrize("theme", THEMES)
def test_help(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, press=["f1"], terminal_size=(120, 40), run_before=loaded)


async def open_new_heinzel(pilot: Pilot[int]) -> None:
    await pilot.press("n")
    for _ in range(100):
        if isinstance(pilot.app.screen, ChooseScreen):
            break
        await pilot.pause(0.05)
    await pilot.pause()


@pytest.mark.parametrize("theme", THEMES)
def test_new_heinzel_dialog(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_new_heinzel))


async def open_review(pilot: Pilot[int]) -> None:
    await pilot.press("f4")
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("theme", THEMES)
def test_review(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_review))


async def open_release_notes(pilot: Pilot[int]) -> None:
    pilot.app.push_screen(HeinzelScreen(homes.heinzel_id(5)))
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.3)


@pytest.mark.parametrize("theme", THEMES)
def test_live_turn_inbox_and_composer(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    heinzel = homes.heinzel_id(5)
    saved = ComposerState(text="make the intro two lines", mode="steer")
    composer_store.save_composer(home, heinzel, saved)
    try:
        app = cockpit(home, client, theme)
        assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_release_notes))
    finally:
        composer_store.composer_path(home, heinzel).unlink(missing_ok=True)
