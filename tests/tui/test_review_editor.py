"""Attack on issue 14, point 2: a malformed ``$EDITOR`` on the review desk is one coded line.

Pilot over a real embedded kernel; the terminal hand-over itself is pinned
in ``tests/e2e/test_review_editor_tmux.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hz_kernel.client import LocalClient
from hz_tui.app import CockpitApp
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_review_desk import client_for, open_desk

NOW = "2026-12-01T09:00:00+00:00"


@pytest.fixture
async def one(tmp_path: Path) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    world = await worlds.build(tmp_path, ("notes-digest",))
    client = await client_for(world)
    try:
        yield world, client
    finally:
        await client.close()


@pytest.mark.parametrize("setting", ['vim "', " ", ""])
async def test_attack2_an_editor_setting_that_cannot_be_parsed_is_hzu061(
    one: tuple[worlds.World, LocalClient], monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    world, client = one
    monkeypatch.setenv("HZ_NOW", NOW)
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.setenv("VISUAL", setting)
    if not setting:
        monkeypatch.setenv("EDITOR", " ")  # VISUAL empty: EDITOR is the setting
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 1)
        await pilot.press("e")
        await until(lambda: any("HZU061" in n.message for n in app.notices.history))
        shown = next(n.message for n in app.notices.history if "HZU061" in n.message)
        assert "cannot parse the editor setting" in shown and "\n" not in shown
        await pilot.press("b")  # the desk goes on
        await until(lambda: screen.base == "placed")
    assert app.return_code in (None, 0)
