"""Issue 13 item 1: the embedded cockpit's quit question counts the running turns as they change.

The cockpit runs on the kernel ``hz --embedded`` embeds, on a real home
with two approved digest heinzels and the offline local model slowed by
``HZ_MODEL_DELAY_MS``. The question is opened while one turn runs; a
second turn starts while it is open, then both end, and each time the
question says so, in the right number ("cut it" for one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from hz_kernel import operations as ops
from hz_kernel.client import DeferredClient
from hz_kernel.connect import connect, turns_to_cut
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.quit import QuitScreen
from tests.tui.kernels import quitting_home
from tests.tui.test_cockpit import SIZE, text_of, until
from tests.tui.test_quit_dialog import quit_dialog

#: Generous: two turns of the slowed local model on a loaded machine.
TURNS_S = 120.0


@pytest.fixture
async def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Home]:
    """Two approved digest heinzels over long notes; no memory floor to queue their turns."""
    names = ("notes-digest", "team-digest")
    floor = "\n[daemon]\nmin_free_memory_mb = 0\n"
    async with quitting_home(tmp_path, monkeypatch, names, settings=floor) as made:
        yield made


def question(dialog: QuitScreen) -> tuple[str, list[str]]:
    """The dialog's title and its options' labels up to their explanations."""
    options = dialog.query_one(OptionList)
    labels = [str(options.get_option_at_index(i).prompt).split(" (")[0] for i in range(3)]
    return text_of(dialog.query_one("#dialog-title", Static)).strip(), labels


async def test_issue13_item1_the_quit_question_recounts_running_turns_while_it_is_open(
    home: Home,
) -> None:
    client = await connect(home, defer_kernel=True)
    assert isinstance(client, DeferredClient)
    app = CockpitApp(home, client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await client.call(ops.WAKE, ops.WakeRequest(ref="notes-digest"))
            await until(lambda: turns_to_cut(client) == 1)

            dialog = await quit_dialog(pilot, app)
            assert question(dialog) == (
                "1 turn running: quit and cut it, hand it to the daemon, or stay?",
                ["Quit and cut it", "Hand it to the daemon", "Stay"],
            )

            await client.call(ops.WAKE, ops.WakeRequest(ref="team-digest"))
            await until(lambda: question(dialog)[0].startswith("2 turns"))
            assert question(dialog) == (
                "2 turns running: quit and cut them, hand them to the daemon, or stay?",
                ["Quit and cut them", "Hand them to the daemon", "Stay"],
            )

            await until(lambda: turns_to_cut(client) == 0, timeout=TURNS_S)
            await until(lambda: question(dialog)[0].startswith("No turn"))
            assert question(dialog) == (
                "No turn is running now: quit, or stay?",
                ["Quit", "Quit and start the daemon", "Stay"],
            )
            assert app.screen is dialog
            await pilot.press("enter")
            await until(lambda: not app.is_running)
        assert not app.hand_off
    finally:
        await client.close()  # as hz does after the window: no index thread left running
