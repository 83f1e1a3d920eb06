"""Attack pass (session 8): quitting ``hz demo`` mid-turn stopped its daemon and cut the turn
without asking.

``hz demo`` stops its daemon when the cockpit closes, so the cockpit asks
about that daemon's running turns as an embedded one asks about its own:
Enter waits for them to end and then quits, "cut" quits at once and says
on the terminal which turns the daemon's stop cuts. A real daemon runs the
turn, the local model held mid-answer (``HZ_MODEL_HOLD_FILE``) until the
test lets it go.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from hz_kernel import operations as ops
from hz_kernel.connect import connect
from hz_kernel.home import Home
from hz_tui.app import QUITTING, CockpitApp
from hz_tui.screens.quit import QuitScreen
from tests.tui.kernels import quitting_home
from tests.tui.test_cockpit import SIZE, text_of, until
from tests.tui.test_quit_dialog import quit_dialog, spine


@pytest.fixture
async def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Home]:
    async with quitting_home(tmp_path, monkeypatch, ("notes-digest",)) as made:
        yield made


@pytest.fixture
def hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    held = tmp_path / "hold"
    held.touch()
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(held))
    return held


@contextlib.asynccontextmanager
async def turn_on_the_daemon(home: Home) -> AsyncIterator[tuple[CockpitApp, Pilot[None]]]:
    """A cockpit on a daemon that ends with it, the daemon running one (held) turn."""
    client = await connect(home, start=True)
    app = CockpitApp(home, client, daemon_ends_with_it=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await client.call(ops.WAKE, ops.WakeRequest(ref="notes-digest"))
            await until(lambda: app.daemon_turns() == 1, timeout=30)
            yield app, pilot
    finally:
        await client.close()


async def test_quitting_a_cockpit_whose_daemon_ends_with_it_waits_for_the_turn_on_enter(
    home: Home, hold: Path
) -> None:
    async with turn_on_the_daemon(home) as (app, pilot):
        dialog = await quit_dialog(pilot, app)
        assert text_of(dialog.query_one("#dialog-title", Static)).startswith(
            "1 turn running, and the daemon stops with this window"
        )
        options = dialog.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(3)]
        assert labels[0] == "Quit when it ends"
        assert labels[1].startswith("Quit now and cut it")
        assert options.highlighted == 0  # Enter never cuts the turn
        await pilot.press("enter")
        await until(lambda: not isinstance(app.screen, QuitScreen))
        assert app.is_running, "waiting, not gone"
        assert QUITTING in app.sub_title, "said until it happens, not only in a toast"

        hold.unlink()
        await until(lambda: not app.is_running, timeout=60)
        events = spine(home)
    assert app.cut_names == []
    started = {e["turn"] for e in events if e["kind"] == "turn.started"}
    finished = {e["turn"]: e["data"] for e in events if e["kind"] == "turn.finished"}
    assert started and set(finished) == started, "the cockpit quit before a turn ended"
    assert all(d["disposition"] == "drafted" for d in finished.values())  # type: ignore[index]


async def test_cutting_the_daemons_turn_on_quit_names_it(home: Home, hold: Path) -> None:
    async with turn_on_the_daemon(home) as (app, pilot):
        await quit_dialog(pilot, app)
        await pilot.press("down", "enter")
        await until(lambda: not app.is_running)
    assert app.cut_names == ["notes-digest"]
