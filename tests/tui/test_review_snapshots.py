"""issue 14 item 3: the review desk pictured, two sides at 200×50 and one column at 120×40.

The home is built once at a fixed path (the header and the pane show it)
with the clock pinned: one heinzel drafted, was edited and approved, and
drafted again, so the desk compares the new draft with the approved text.
"""

from __future__ import annotations

import asyncio
import fcntl
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.review import ReviewScreen
from tests.tui import homes, worlds

ROOT = Path("/tmp/hz-review-snapshots/world")
#: The world's lock is held for the module: its tests share one worker rather than wait.
pytestmark = pytest.mark.xdist_group("review-snapshots")


@pytest.fixture(scope="module")
def world_root() -> Iterator[Path]:
    ROOT.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(ROOT.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(ROOT, ignore_errors=True)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HZ_NOW", homes.NOW)
            asyncio.run(worlds.build_redrafted(ROOT, ("notes-digest", "team-digest")))
        yield ROOT


@pytest.fixture
def desk(world_root: Path, pinned_clock: None) -> Iterator[tuple[Home, LocalClient]]:
    home = worlds.World(world_root).home
    opened = asyncio.run(LocalClient.open(home))
    try:
        yield home, opened
    finally:
        asyncio.run(opened.close())


async def open_desk(pilot: Pilot[int]) -> None:
    await pilot.app.loaded.wait()  # type: ignore[attr-defined]
    await pilot.press("f4")
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen)
    while screen.shown is None:
        await pilot.pause(0.05)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def cockpit(home: Home, client: LocalClient) -> CockpitApp:
    app = CockpitApp(home, client, live=False)
    app.theme = "hz-dark"
    return app


def test_issue14_item3_review_desk_side_by_side(snap_compare, desk) -> None:
    home, client = desk
    assert snap_compare(cockpit(home, client), terminal_size=(200, 50), run_before=open_desk)


def test_issue14_item3_review_desk_unified(snap_compare, desk) -> None:
    home, client = desk
    assert snap_compare(cockpit(home, client), terminal_size=(120, 40), run_before=open_desk)
