"""Issue 13 item 1: an embedded cockpit (``hz --embedded``) that quits mid-turn asks first.

The cockpit runs on the kernel ``hz --embedded`` embeds (``connect`` with
``defer_kernel``), on a real home with the offline local model slowed by
``HZ_MODEL_DELAY_MS`` so a turn is running when the user quits. "Stay"
keeps the cockpit; "hand them to the daemon" closes the embedded kernel
(the turn is cut at a checkpoint) and starts the home's daemon, whose
first tick resumes the turn and finishes it. The daemon is stopped at
teardown, whatever happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from textual.widgets import OptionList, Static

from hz_kernel import operations as ops
from hz_kernel.client import DeferredClient
from hz_kernel.connect import connect, hand_off, turns_to_cut
from hz_kernel.daemon.discovery import read_discovery
from hz_kernel.home import Home
from hz_kernel.store.bodies import body_path
from hz_tui.app import CockpitApp
from hz_tui.screens.quit import QuitScreen
from tests.tui.kernels import quitting_home
from tests.tui.test_cockpit import SIZE, text_of, until


@pytest.fixture
async def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Home]:
    """A home with one approved digest heinzel; any daemon started on it is stopped after."""
    async with quitting_home(tmp_path, monkeypatch, ("notes-digest",)) as made:
        yield made


def spine(home: Home) -> list[dict[str, object]]:
    (heinzel_id,) = home.heinzel_ids()
    path = home.heinzel_dir(heinzel_id) / "session.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


async def quit_dialog(pilot: object, app: CockpitApp) -> QuitScreen:
    await pilot.press("ctrl+q")  # type: ignore[attr-defined]
    await until(lambda: isinstance(app.screen, QuitScreen))
    assert isinstance(app.screen, QuitScreen)
    return app.screen


async def test_issue13_item1_quit_mid_turn_offers_cut_hand_off_or_stay_and_the_daemon_finishes(
    home: Home,
) -> None:
    client = await connect(home, defer_kernel=True)
    assert isinstance(client, DeferredClient)
    app = CockpitApp(home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await client.call(ops.WAKE, ops.WakeRequest(ref="notes-digest"))
        await until(lambda: turns_to_cut(client) == 1)
        (turn,) = [e["turn"] for e in spine(home) if e["kind"] == "turn.started"]

        dialog = await quit_dialog(pilot, app)
        assert text_of(dialog.query_one("#dialog-title", Static)).startswith(
            "1 turn running: quit and cut it, hand it to the daemon, or stay?"
        )
        options = dialog.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(3)]
        assert [label.split(" (")[0] for label in labels] == [
            "Quit and cut it",
            "Hand it to the daemon",
            "Stay",
        ]
        assert options.highlighted == 1  # Enter hands the turn over; it never cuts it
        await pilot.press("down", "enter")
        await until(lambda: not isinstance(app.screen, QuitScreen))
        assert app.is_running and not app.hand_off and turns_to_cut(client) == 1

        await quit_dialog(pilot, app)
        await pilot.press("enter")
        await until(lambda: not app.is_running)
    assert app.hand_off
    report = await hand_off(client, home)
    assert report.running and not report.adopted
    assert read_discovery(home) is not None and read_discovery(home).pid == report.pid  # type: ignore[union-attr]

    deadline = asyncio.get_running_loop().time() + 90
    while not any(e["kind"] == "turn.finished" and e["turn"] == turn for e in spine(home)):
        assert asyncio.get_running_loop().time() < deadline, "the daemon did not finish the turn"
        await asyncio.sleep(0.2)
    events = [e for e in spine(home) if e.get("turn") == turn]
    resumed = [e for e in events if e["kind"] == "turn.resumed"]
    assert resumed and resumed[0]["data"]["woken_by"] == "restart"  # type: ignore[index]
    (finished,) = [e for e in events if e["kind"] == "turn.finished"]
    assert finished["data"]["disposition"] == "drafted"  # type: ignore[index]


async def test_hand_off_cuts_a_thinking_turn_at_once_and_the_daemon_runs_its_think_again(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Session 6 (new-user pass): "Hand it to the daemon (it starts now …)" never waits for
    a model step to end. The model is held mid-answer (``HZ_MODEL_HOLD_FILE``), so a hand-off
    that waited for the step would never return; it cuts the turn at once (the think attempt
    ``engine_handed_over``), starts the daemon, and the daemon resumes the turn, asks the
    model again (no ``engine_restart_mid_stream``) and finishes it."""
    hold = tmp_path / "hold"
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(hold))
    client = await connect(home, defer_kernel=True)
    assert isinstance(client, DeferredClient)
    app = CockpitApp(home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await client.call(ops.WAKE, ops.WakeRequest(ref="notes-digest"))
        await until(lambda: any(e["kind"] == "attempt.started" for e in spine(home)))
        (turn,) = [e["turn"] for e in spine(home) if e["kind"] == "turn.started"]
        (heinzel_id,) = home.heinzel_ids()
        body = body_path(home.heinzel_dir(heinzel_id), str(turn))
        await until(lambda: body.exists() and b'"chunk"' in body.read_bytes())
        hold.touch()  # the answer has begun streaming; now it stops there until released
        await quit_dialog(pilot, app)
        await pilot.press("enter")
        await until(lambda: not app.is_running)
    report = await asyncio.wait_for(hand_off(client, home), 60)
    assert report.running and not report.adopted
    events = [e for e in spine(home) if e.get("turn") == turn]
    cut = [e for e in events if e["kind"] == "attempt.failed"]
    assert [e["data"]["code"] for e in cut] == ["engine_handed_over"]  # type: ignore[index]
    assert not any(e["kind"] == "step.done" and e["data"]["step"] == "think" for e in events)  # type: ignore[index]

    hold.unlink()
    deadline = asyncio.get_running_loop().time() + 90
    while not any(e["kind"] == "turn.finished" and e["turn"] == turn for e in spine(home)):
        assert asyncio.get_running_loop().time() < deadline, "the daemon did not finish the turn"
        await asyncio.sleep(0.2)
    events = [e for e in spine(home) if e.get("turn") == turn]
    assert [e["data"]["woken_by"] for e in events if e["kind"] == "turn.resumed"] == ["restart"]  # type: ignore[index]
    assert [e["data"]["code"] for e in events if e["kind"] == "attempt.failed"] == [  # type: ignore[index]
        "engine_handed_over"
    ]
    (finished,) = [e for e in events if e["kind"] == "turn.finished"]
    assert finished["data"]["disposition"] == "drafted"  # type: ignore[index]
