"""The contract page: versions newest first, diffs between them, the waiting proposal decided."""

from __future__ import annotations

from textual.pilot import Pilot

from hz_kernel.client import LocalClient
from hz_kernel.contracts import render_template
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.contract import ContractScreen
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.key_bar import KeyBar
from tests.tui.test_cockpit import SIZE, open_page, text_of, until

TEXT = render_template("weekly-report", {"name": "contract-demo"})


def capped(cap: str) -> str:
    lines = [f"    max_usd: {cap}" if "max_usd:" in line else line for line in TEXT.splitlines()]
    return "\n".join(lines) + "\n"


def footer_words(bar: KeyBar) -> set[str]:
    return {key.description for key in bar.keys}


def pane_text(page: ContractScreen) -> str:
    return text_of(page.query_one(DiffView).query_one("#diff-text"))


async def contract_page(app: CockpitApp, pilot: Pilot[None], heinzel_id: str) -> ContractScreen:
    """The heinzel's contract page, opened as a user would: its page, then ``v``."""
    await app.loaded.wait()
    await open_page(pilot, heinzel_id)
    await pilot.press("v")
    page = app.screen
    assert isinstance(page, ContractScreen)
    return page


async def test_versions_diffs_and_an_amendment_approved_from_the_contract_page(
    cockpit_home: Home, client: LocalClient
) -> None:
    kernel = client.kernel
    made = await kernel.new(text=TEXT)
    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        page = await contract_page(app, pilot, made.id)
        await until(lambda: page.view is not None and "max_usd" in pane_text(page))
        assert page.pending is not None and page.pending.first
        await pilot.press("a")
        await until(lambda: page.view is not None and page.view.versions == [1])
        assert (await kernel.contract(ref=made.id)).pending is None
        await kernel.amend(ref=made.id, text=capped("0.25"), by="heinzel", reason="quieter")
        await until(lambda: page.pending is not None and not page.pending.first)
        await until(lambda: "+    max_usd: 0.25" in pane_text(page))
        await pilot.press("a")
        await until(lambda: page.view is not None and page.view.versions == [1, 2])
        await until(
            lambda: "+    max_usd: 0.25" in pane_text(page) and "v1.prose.md" in pane_text(page)
        )
        await pilot.press("d")
        await until(
            lambda: "v1.prose.md" not in pane_text(page) and "max_usd: 0.25" in pane_text(page)
        )
        await pilot.press("down")
        await until(lambda: page.shown is not None and page.shown.version == 1)
        await until(lambda: "max_usd: 0.25" not in pane_text(page))
        await kernel.amend(ref=made.id, text=capped("0.10"), by="heinzel")
        await until(lambda: page.pending is not None)
        await pilot.press("x")
        await until(lambda: page.view is not None and page.pending is None)
        assert (await kernel.contract(ref=made.id)).versions == [1, 2]
        await pilot.press("escape")
        assert not isinstance(app.screen, ContractScreen)


async def test_the_footer_drops_approve_and_decline_once_nothing_waits(
    cockpit_home: Home, client: LocalClient
) -> None:
    """After ``x`` declined the amendment, ``a Approve  x Decline`` leave the footer (found by
    the new-user pass): nothing waits for them."""
    kernel = client.kernel
    made = await kernel.new(text=TEXT)
    await kernel.approve(ref=made.id)
    await kernel.amend(ref=made.id, text=capped("0.25"), by="heinzel")
    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        page = await contract_page(app, pilot, made.id)
        bar = page.query_one(KeyBar)
        await until(lambda: page.pending is not None)
        await until(lambda: {"Approve", "Decline"} <= footer_words(bar))
        await pilot.press("x")
        await until(lambda: page.view is not None and page.pending is None)
        await until(lambda: not {"Approve", "Decline"} & footer_words(bar))
