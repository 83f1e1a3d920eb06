"""A turn's causes read once each on a heinzel's page (attack pass, s5): the kernel lists one
cause per wake the turn answers, so two changed sources came out as
``cause source-changed, source-changed``. Pilot over a real embedded kernel."""

from __future__ import annotations

from datetime import timedelta

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.terms import Cause
from hz_kernel.vocabulary import ContractApproved, TurnFinished, TurnStarted
from hz_tui.app import CockpitApp
from hz_tui.widgets.step_line import StepLine
from hz_tui.widgets.timeline import Timeline
from tests.tui import homes
from tests.tui.test_cockpit import SIZE, open_page, text_of, until


async def test_the_live_line_and_the_timeline_show_each_cause_once(
    cockpit_home: Home, client: LocalClient
) -> None:
    """A turn started for two changed sources and a schedule shows
    ``cause source-changed, schedule`` on the live line and the same in the timeline."""
    writer = homes.Writer(client.kernel, 31, "sources-digest")
    fingerprint = await writer.create(
        homes.days_ago(10), schedule="0 9 * * *", asset="doc:src.md#x"
    )
    await writer.event(ContractApproved(version=1, fingerprint=fingerprint), homes.days_ago(10, 16))
    turn = homes.turn_id(31, 1)
    at = homes.days_ago(1)
    causes: list[Cause] = ["source-changed", "source-changed", "schedule"]
    await writer.event(
        TurnStarted(cause="source-changed", causes=causes, contract_version=1), at, turn=turn
    )
    finished = TurnFinished(disposition="nothing", causes=causes, report="no change", usd=0.01)
    await writer.event(finished, at + timedelta(seconds=30), turn=turn)
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, writer.id)
        line = page.query_one(StepLine)
        await until(lambda: "cause " in text_of(line))
        assert "cause source-changed, schedule ·" in text_of(line), text_of(line)
        timeline = page.query_one(Timeline)
        await until(lambda: timeline.row_count == 1)
        assert str(timeline.get_cell(turn, "cause")) == "source-changed, schedule"
