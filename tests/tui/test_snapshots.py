"""Every cockpit screen, pictured: dark and light at 120×40, the home also at 80×24.

The pictures pin the pid on the kernel page and ``HZ_NOW`` everywhere; the
live turn's body is read on a timer, so its page is pictured after a pause.
"""

from __future__ import annotations

import asyncio
import fcntl
import shutil
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from textual.pilot import Pilot

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.commands.tick import TickPulse
from hz_kernel.daemon.admission import AdmissionController
from hz_kernel.home import Home
from hz_kernel.store import composer as composer_file
from hz_kernel.tick.report import TickDeferred, TickReport, TickSkipped
from hz_tui.app import CockpitApp
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.graph import GraphScreen, GraphTable
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.review import ReviewScreen
from tests.tui import homes, worlds

THEMES = ["hz-dark", "hz-light"]


def cockpit(home: Home, client: LocalClient, theme: str) -> CockpitApp:
    app = CockpitApp(home, client, live=False)
    app.theme = theme
    return app


async def loaded(pilot: Pilot[int]) -> None:
    """The first rows are on screen and, where a kernel answers, the home's totals line has
    today's spending (asked beside the first listing), and the activity the spines' history
    (read beside the first rows)."""
    app = pilot.app
    await app.loaded.wait()  # type: ignore[attr-defined]
    home = app.get_home()  # type: ignore[attr-defined]
    for _ in range(100):
        spent = home.spend is not None or not app.link.attached  # type: ignore[attr-defined]
        if spent and (home.history_shown or not home.table.items):
            break
        await pilot.pause(0.05)
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


def test_issue14_item5_home_with_preview_and_activity_at_240x70(
    snap_compare, snapshot_client
) -> None:
    """issue 14 item 5: on a wide terminal the preview and the activity take the width the
    table's columns leave; the totals line counts what runs, waits and was spent."""
    home, client = snapshot_client
    app = cockpit(home, client, "hz-dark")
    assert snap_compare(app, terminal_size=(240, 70), run_before=loaded)


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


def pinned_limits(client: LocalClient, max_turns: int = 4) -> None:
    """The machine's memory is no part of a picture: the kernel's gate samples a fixed 16 GB
    against a 2 GB floor (the controller takes its sampler for exactly this)."""
    client.kernel.admission = AdmissionController(max_turns, 4, 2048, sample=lambda: 16384)


@pytest.mark.parametrize("theme", THEMES)
def test_kernel_page(snap_compare, snapshot_client, theme: str, monkeypatch) -> None:
    # The page shows this process's pid; pin it so the picture does not change per run.
    monkeypatch.setattr("hz_kernel.client.os.getpid", lambda: 4242)
    home, client = snapshot_client
    pinned_limits(client)
    app = cockpit(home, client, theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=then(press_f2))


#: Where the five-heinzel home of the kernel-load picture lives (the page shows its path).
LOAD_HOME = Path("/tmp/hz-cockpit-snapshots/kernel-load")
LOAD_NAMES = ("alpha-digest", "bravo-digest", "charlie-digest", "delta-digest", "echo-digest")
#: The page is looked at this long after the turns asked for their slots.
LATER = "2026-11-20T12:01:35Z"


@pytest.fixture
def load_client(pinned_clock: None, monkeypatch) -> Iterator[tuple[Home, LocalClient]]:
    """Five real digest heinzels that drafted once, rebuilt per run at a fixed path, and a
    kernel limited to one turn at a time; the local model holds each chunk ten minutes."""
    LOAD_HOME.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(LOAD_HOME.parent / "kernel-load.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(LOAD_HOME, ignore_errors=True)
        world = asyncio.run(worlds.build(LOAD_HOME, LOAD_NAMES))
        monkeypatch.setenv("HZ_HOME", str(world.home.root))
        monkeypatch.setenv("HZ_MODEL_DELAY_MS", "600000")
        opened = asyncio.run(LocalClient.open(world.home))
        pinned_limits(opened, max_turns=1)
        pulse = TickPulse(60)
        pulse.beat(
            TickReport(
                at=datetime.fromisoformat(homes.NOW),
                due=2,
                skipped=[TickSkipped(heinzel=world.ids["echo-digest"], name="echo-digest",
                                     reason="nothing-moved", keys=[])],
                deferred=[TickDeferred(heinzel=world.ids["delta-digest"], name="delta-digest",
                                       reason="busy", keys=[],
                                       due_at=datetime.fromisoformat(homes.NOW))],
            )
        )  # fmt: skip
        opened.kernel.pulse = pulse
        try:
            yield world.home, opened
        finally:
            asyncio.run(opened.close())


def five_wakes(monkeypatch):  # type: ignore[no-untyped-def]
    """Wake all five at once: the first runs (held in think), four wait for its slot."""

    async def run(pilot: Pilot[int]) -> None:
        client = pilot.app.link.current  # type: ignore[attr-defined]
        kernel = client.kernel
        woken = [
            asyncio.ensure_future(client.call(ops.WAKE, ops.WakeRequest(ref=name)))
            for name in LOAD_NAMES
        ]
        for _ in range(600):
            activity = kernel.turn_activity()
            if kernel.admission.queued("turn") == 4 and activity and activity[0].step == "think":
                break
            await pilot.pause(0.05)
        else:
            pytest.fail(f"never 1 running and 4 queued: {kernel.turn_activity()}")
        assert not any(wake.done() for wake in woken)
        monkeypatch.setenv("HZ_NOW", LATER)

    return run


def test_issue13_item7_kernel_page_with_one_running_and_four_queued_turns(
    snap_compare, load_client, monkeypatch
) -> None:
    """Issue 13 items 2 and 7: the kernel page lists the running turn (heinzel, step, elapsed,
    cost so far) and the four queued behind it ("queued: capacity"), the tick (last, next,
    what it skipped and put off) and the limits with the memory sample and floor."""
    monkeypatch.setattr("hz_kernel.client.os.getpid", lambda: 4242)
    home, client = load_client
    app = cockpit(home, client, "hz-dark")
    assert snap_compare(
        app, terminal_size=(120, 40), run_before=then(five_wakes(monkeypatch), press_f2)
    )


@pytest.mark.parametrize("theme", THEMES)
def test_help(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, press=["f1"], terminal_size=(120, 40), run_before=loaded)


async def press_until(pilot: Pilot[int], key: str, shown: Callable[[], bool]) -> None:
    """Press ``key``, then wait (a few seconds at most) until what it opens is ``shown``."""
    await pilot.press(key)
    for _ in range(100):
        if shown():
            break
        await pilot.pause(0.05)
    await pilot.pause()


async def open_graph(pilot: Pilot[int]) -> None:
    def shown() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, GraphScreen) and bool(screen.query_one(GraphTable).row_count)

    await press_until(pilot, "f6", shown)


@pytest.mark.parametrize("theme", THEMES)
def test_issue18_item3_graph_page(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, theme)
    assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_graph))


def test_issue18_item3_graph_page_at_80x24(snap_compare, snapshot_client) -> None:
    home, client = snapshot_client
    app = cockpit(home, client, "hz-dark")
    assert snap_compare(app, terminal_size=(80, 24), run_before=then(open_graph))


async def open_new_heinzel(pilot: Pilot[int]) -> None:
    await press_until(pilot, "ctrl+n", lambda: isinstance(pilot.app.screen, ChooseScreen))


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


def keep_composer(home: Home, heinzel: str, text: str, mode: str) -> None:
    """The composer's text as the kernel keeps it, as if typed in an earlier window."""
    composer_file.update(
        home.root, heinzel, lambda now: now.model_copy(update={"text": text, "mode": mode})
    )


@pytest.mark.parametrize("theme", THEMES)
def test_live_turn_inbox_and_composer(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    heinzel = homes.heinzel_id(5)
    keep_composer(home, heinzel, "make the intro two lines", "steer")
    try:
        app = cockpit(home, client, theme)
        assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_release_notes))
    finally:
        composer_file.composer_path(home.root, heinzel).unlink(missing_ok=True)


async def focus_composer(pilot: Pilot[int]) -> None:
    await pilot.press("i", "end")
    await pilot.pause(0.3)


def test_issue14_item4_composer_multi_line(snap_compare, snapshot_client) -> None:
    """issue 14 item 4: the composer grows with a multi-line message (up to ten lines)."""
    home, client = snapshot_client
    heinzel = homes.heinzel_id(5)
    text = "make the intro two lines\nand name the owners:\n- Ana for search\n- Bo for checkout"
    keep_composer(home, heinzel, text, "steer")
    try:
        app = cockpit(home, client, "hz-dark")
        assert snap_compare(
            app, terminal_size=(120, 40), run_before=then(open_release_notes, focus_composer)
        )
    finally:
        composer_file.composer_path(home.root, heinzel).unlink(missing_ok=True)
