"""Draft review driven with Pilot: real drafts in real documents, a real editor process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hz_kernel.client import LocalClient
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import TurnFinished
from hz_tui.app import CockpitApp
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.contract import ContractScreen
from hz_tui.screens.review import ReviewScreen
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.heinzel_table import HeinzelTable
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE, open_page, text_of, until

EDITOR = """#!/bin/sh
echo "$@" > "$0.args"
for last; do :; done
sed -i 's/shipped search/shipped fuzzy search/' "$last"
"""


@pytest.fixture
async def world(tmp_path: Path) -> worlds.World:
    return await worlds.build(tmp_path)


@pytest.fixture
async def cockpit_client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as client:
        yield client


def diff_text(screen: ReviewScreen) -> str:
    return text_of(screen.query_one(DiffView).query_one("#diff-text"))  # type: ignore[arg-type]


async def test_review_edit_approve_reject_in_seconds(
    world: worlds.World,
    cockpit_client: LocalClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o700)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(editor))
    app = CockpitApp(world.home, cockpit_client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("f4")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await until(lambda: screen.queue.row_count == 2 and screen.review is not None)
        first = screen.queue.cursor_key()
        assert screen.review is not None and screen.review.heinzel_name == "notes-digest"
        assert "unchanged since it was placed" in diff_text(screen)
        assert "nothing was approved in this section before" in diff_text(screen)
        await pilot.press("j")
        await until(lambda: screen.review is not None and screen.review.key != first)
        assert screen.review.heinzel_name == "team-digest"
        await pilot.press("n")
        await until(lambda: screen.review is not None and screen.review.key == first)
        await pilot.press("e")
        await until(lambda: screen.review is not None and screen.review.status == "edited")
        document = world.document("notes-digest")
        line, path = (tmp_path / "editor.sh.args").read_text().split()
        assert path == str(document) and line.startswith("+")
        opened_at = document.read_text().splitlines()[int(line[1:]) - 1]
        assert opened_at == screen.review.current_text.splitlines()[0]  # the draft's first line
        await pilot.press("b")
        await until(lambda: "your edits" in diff_text(screen))
        shown = diff_text(screen)
        assert "- - shipped search" in shown and "+ - shipped fuzzy search" in shown
        await pilot.press("enter")
        await pilot.press("a")
        await until(lambda: screen.queue.row_count == 1)
        approved = world.document("notes-digest").read_text()
        assert worlds.TAG not in approved and "shipped fuzzy search" in approved
        await until(
            lambda: screen.review is not None and screen.review.heinzel_name == "team-digest"
        )
        screen.undo_seconds = 0.05
        await pilot.press("x")
        await until(lambda: screen.queue.row_count == 0)
        await until(lambda: "hz:begin" not in world.document("team-digest").read_text())
        await until(lambda: "No drafts wait for you" in diff_text(screen))
        notices = len(app.notices.history)
        await pilot.press("a")  # no draft, so no Approve key: nothing happens, nothing is said
        await pilot.pause()
        assert len(app.notices.history) == notices
        await pilot.press("escape")
        assert not isinstance(app.screen, ReviewScreen)


async def test_toasts_for_a_landing_draft_and_a_failed_turn_and_the_bell(
    world: worlds.World, cockpit_client: LocalClient
) -> None:
    settings = world.home.settings_path
    settings.write_text(settings.read_text() + "\n[cockpit]\nbell = true\n")
    home = worlds.World(world.root).home
    app = CockpitApp(home, cockpit_client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        assert app.bell_on
        await pilot.pause(0.2)
        await pilot.press("f4")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await until(lambda: screen.queue.row_count == 2)
        kernel = cockpit_client.kernel
        made = await kernel.new(text=worlds.digest("late-digest"))
        await kernel.approve(ref=made.name)
        await kernel.wake(ref=made.name)
        await until(lambda: screen.queue.row_count == 3)
        await kernel.append(
            made.id,
            TurnFinished(disposition="failed", reason="model_unavailable"),
            turn="01JC0CKP1T0000000100000009",
        )

        def messages() -> list[str]:
            return [n.message for n in app.notices.history]

        await until(lambda: "late-digest: a turn failed: model_unavailable" in messages())
        landed = "late-digest: a draft landed in reports/late-digest.md#digest (F4 to review)"
        assert landed in messages(), messages()
        await pilot.press("ctrl+p", *"bell")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert not app.bell_on
    assert CockpitApp(home, cockpit_client).bell_on is False


async def test_issue12_item4_a_and_x_on_the_home_table_and_a_page_decide_the_waiting_draft(
    tmp_path: Path,
) -> None:
    """The row and the page say ``Waits: draft``: ``a``/``x`` there decide it by the heinzel."""
    names = ("notes-digest", "team-digest", "ops-digest")
    world = await worlds.build(tmp_path, names)
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    app = CockpitApp(world.home, client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.pause(0.2)
            table = app.get_home().query_one(HeinzelTable)
            table.move_cursor(row=table.position[world.ids["notes-digest"]])
            await pilot.press("a")
            await until(lambda: worlds.TAG not in world.document("notes-digest").read_text())
            await open_page(pilot, world.ids["team-digest"])
            await pilot.press("a")
            await until(lambda: worlds.TAG not in world.document("team-digest").read_text())
            await pilot.press("escape")
            await open_page(pilot, world.ids["ops-digest"])
            await pilot.press("x")
            await until(lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await until(lambda: "hz:begin" not in world.document("ops-digest").read_text())
            assert not any("HZU" in n.message for n in app.notices.history)
    finally:
        await client.close()
    assert "shipped search" in world.document("team-digest").read_text()


async def test_issue12_item4_the_contract_page_decides_its_proposal_beside_a_waiting_draft(
    world: worlds.World, cockpit_client: LocalClient
) -> None:
    """With a draft and an amendment waiting, ``a`` on the contract page approves the
    amendment it shows (the heinzel's name alone would be ambiguous)."""
    kernel = cockpit_client.kernel
    heinzel_id = world.ids["notes-digest"]
    current = (await kernel.contract(ref=heinzel_id)).text or ""
    await kernel.amend(ref=heinzel_id, text=current.replace("max_usd: 0.2", "max_usd: 0.1"))
    app = CockpitApp(world.home, cockpit_client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await open_page(pilot, heinzel_id)
        await pilot.press("v")
        page = app.screen
        assert isinstance(page, ContractScreen)
        await until(lambda: page.pending is not None and not page.pending.first)
        await pilot.press("a")
        await until(lambda: page.view is not None and page.view.versions == [1, 2])
        assert not any("HZU" in n.message for n in app.notices.history)
    assert worlds.TAG in world.document("notes-digest").read_text()
