"""Issue 14 item 2: the transcript page pictured at 120×40, a real turn searched with ``/``.

The turn is run by the real kernel with the offline local model in a home
at a fixed path; the clock is pinned (``HZ_NOW``) and so are the ids the
kernel mints (a counter stands in for ``ULID()`` in the two modules that
mint heinzel and turn ids), so the picture is the same on every run.
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from ulid import ULID

from hz_kernel import core
from hz_kernel.client import LocalClient
from hz_kernel.commands import turns
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_tui.app import CockpitApp
from hz_tui.screens.transcript import TranscriptScreen
from tests.tui import homes, worlds

ROOT = Path("/tmp/hz-transcript-snapshot")


@pytest.fixture
def transcript_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Home, str]]:
    """A home at ``ROOT`` whose one heinzel drafted once; built afresh under a lock."""
    ROOT.parent.mkdir(parents=True, exist_ok=True)
    counter = itertools.count(1)

    def minted() -> ULID:
        return ULID.from_str(f"01JC0CKP1T{next(counter):016d}")

    monkeypatch.setenv("HZ_NOW", homes.NOW)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(core, "ULID", minted)
    monkeypatch.setattr(turns, "ULID", minted)
    with open(ROOT.parent / "hz-transcript-snapshot.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(ROOT, ignore_errors=True)
        world = asyncio.run(worlds.build(ROOT, ("notes-digest",)))
        yield world.home, world.ids["notes-digest"]


def test_transcript_page(snap_compare, transcript_home: tuple[Home, str]) -> None:
    home, heinzel = transcript_home
    client = asyncio.run(LocalClient.open(home))

    async def searched(pilot: Pilot[int]) -> None:
        app = pilot.app
        await app.loaded.wait()  # type: ignore[attr-defined]
        app.push_screen(TranscriptScreen(heinzel))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        while not screen.model.loaded:
            await pilot.pause(0.05)
        await pilot.press("slash", *"contract", "enter")
        await pilot.pause()

    try:
        app = CockpitApp(home, client, live=False)
        app.theme = "hz-dark"
        assert snap_compare(app, terminal_size=(120, 40), run_before=searched)
    finally:
        asyncio.run(client.close())


def test_the_pictured_turn_ran_for_real(transcript_home: tuple[Home, str]) -> None:
    """The picture is of a kernel's turn, not of a file written for it."""
    home, heinzel = transcript_home

    async def records() -> list[str]:
        kernel = await Kernel.open(home)
        try:
            answer = await kernel.turn_transcript(ref=heinzel)
        finally:
            await kernel.close()
        return [r["type"] for r in answer.records]

    assert {"context", "attempt", "messages", "outcome"} <= set(asyncio.run(records()))
