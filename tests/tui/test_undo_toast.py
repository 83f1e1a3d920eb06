"""issue 14 item 3 (attack): no toast offers an undo that is gone.

A reject on the review desk says "draft rejected · u undoes it" for as long
as its undo window. Once ``u`` took it back, or the window ended and the
rejection was sent, that toast comes down (the notices page keeps it).
"""

from __future__ import annotations

import pytest
from textual.widgets._toast import Toast

from hz_kernel.client import LocalClient
from hz_tui.app import CockpitApp
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_review_desk import NOW, THREE, open_desk, pending, three

__all__ = ["three"]  # the review desk's fixture: three drafts waiting

UNDO = "u undoes it"


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


def offers_undo(app: CockpitApp) -> bool:
    """Whether a toast on screen still offers the undo."""
    return any(UNDO in str(toast.render()) for toast in app.screen.query(Toast))


async def test_issue14_item3_the_undo_toast_goes_once_the_reject_is_undone(
    three: tuple[worlds.World, LocalClient],
) -> None:
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600  # the window stays open for as long as the test needs
        await pilot.press("x")
        await until(lambda: offers_undo(app))
        await pilot.press("u")
        await until(lambda: screen.queue.row_count == 3)
        await until(lambda: not offers_undo(app))
        assert any(UNDO in n.message for n in app.notices.history)  # the history keeps it
        assert not any(UNDO in n.message for n in app.notices.showing)
    assert await pending(client) == set(THREE)


async def test_issue14_item3_the_undo_toast_goes_when_the_window_ends(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """Ending the window as its timer does (``send_held``): the rejection is sent, and the
    toast, which would otherwise stay for its own timeout, comes down with the undo."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600
        name = screen.queue.drafts[0].heinzel_name or ""
        await pilot.press("x")
        await until(lambda: offers_undo(app))
        (key,) = screen.undoable
        screen.send_held(key)
        await until(lambda: not offers_undo(app))
        await pilot.press("u")  # nothing to undo, and nothing says otherwise
        await until(lambda: any("Nothing to undo" in n.message for n in app.notices.history))
    assert await pending(client) == set(THREE) - {name}
