"""Issue 18 item 3: the graph page in the cockpit (F6), on the worked example.

Priya's weekly report has drafted once (its reads and its write observed as
well as declared); exec-summary declares that it reads the report's section
and has not run. The page must show both, say which edges are declared and
which were seen, narrow to one heinzel with ``z`` and open a heinzel's page
with Enter; from a heinzel's page F6 opens the graph narrowed to it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from hz_kernel.client import LocalClient
from hz_kernel.commands.team import team_id
from hz_kernel.home import Home
from hz_kernel.team.state_branch import StateBranch
from hz_tui.app import CockpitApp
from hz_tui.screens.graph import GraphScreen, GraphTable
from hz_tui.screens.heinzel import HeinzelScreen
from tests.integration.test_graph import NOW, worked
from tests.support.team import GRAPH_NOW, T0, hz_ok, make_team_repo, placed, theo_home
from tests.tui.test_cockpit import SIZE, text_of, until

__all__ = ["worked"]


def _rows(app: CockpitApp) -> list[list[str]]:
    table = app.screen.query_one(GraphTable)
    return [[str(cell) for cell in table.get_row_at(n)] for n in range(table.row_count)]


def _groups(rows: list[list[str]]) -> dict[str, list[list[str]]]:
    """The rows under each heinzel's name (the name stands on its first row only)."""
    groups: dict[str, list[list[str]]] = {}
    name = ""
    for row in rows:
        name = row[0] or name
        groups.setdefault(name, []).append(row)
    return groups


def _summary(app: CockpitApp) -> str:
    return text_of(app.screen.query_one("#graph-summary", Static))


async def test_issue18_item3_the_graph_page_shows_declared_and_observed_apart(
    worked: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)
    home = Home.resolve(worked[0])
    client = await LocalClient.open(home)
    try:
        app = CockpitApp(home, client, live=False)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.press("f6")
            await until(lambda: isinstance(app.screen, GraphScreen) and bool(_rows(app)))
            groups = _groups(_rows(app))
            weekly, summary = groups["weekly-report"], groups["exec-summary"]
            verbs = {(r[1], r[3]) for r in weekly}
            assert ("reads", "declared · observed") in verbs
            assert ("writes", "declared · observed") in verbs
            needs = [r for r in summary if r[1] == "needs"]
            assert len(needs) == 1 and needs[0][2].startswith("weekly-report\nvia doc:")
            assert needs[0][3] == "declared only"
            assert "2 heinzels" in _summary(app) and "3 declared only" in _summary(app)

            table = app.screen.query_one(GraphTable)
            table.move_cursor(row=_rows(app).index(weekly[0]))
            await pilot.press("z")
            await until(lambda: "only weekly-report" in _summary(app))
            assert {r[0] for r in _rows(app) if r[0]} == {"exec-summary", "weekly-report"}
            await pilot.press("z")
            await until(lambda: "neighbours" not in _summary(app))
            assert _rows(app)[table.cursor_row] == weekly[0], "the cursor stays on its heinzel"

            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, HeinzelScreen))
            opened = app.screen
            assert isinstance(opened, HeinzelScreen)
            await pilot.press("f6")
            await until(lambda: isinstance(app.screen, GraphScreen))
            await until(lambda: "only weekly-report and its neighbours" in _summary(app))
            await pilot.press("escape")
            await until(lambda: isinstance(app.screen, HeinzelScreen))
    finally:
        await client.close()


@pytest.fixture
def team_home(tmp_path: Path) -> Path:
    """Theo's home: exec-summary reads weekly-report, a team heinzel only Priya's home runs;
    a second team heinzel (``plans``) is known by its team id only. No document is here."""
    team = make_team_repo(tmp_path)
    priya = StateBranch(tmp_path / "priya", str(team))
    weekly, hidden = team_id("weekly-report"), team_id("plans")
    priya.queue(
        [
            placed("01JDTURN01", heinzel=weekly, asset="doc:reports/weekly.md#this-week"),
            placed("01JDTURN03", heinzel=hidden, asset="doc:private/plans.md"),
        ]
    )
    assert priya.push_pending(now=T0).error is None
    theo = theo_home(tmp_path, team)
    hz_ok(theo, "team", "log")
    return theo


async def test_the_graph_page_with_heinzels_only_other_homes_run(
    team_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count says which heinzels run elsewhere, ``z`` gets back to everything, Enter on
    one run elsewhere says why no page opens, and unreadable documents are marked."""
    monkeypatch.setenv("HZ_NOW", GRAPH_NOW)
    home = Home.resolve(team_home)
    client = await LocalClient.open(home)
    try:
        app = CockpitApp(home, client, live=False)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.press("f6")
            await until(lambda: isinstance(app.screen, GraphScreen) and bool(_rows(app)))
            assert "3 heinzels (2 on other homes)" in _summary(app), _summary(app)
            groups = _groups(_rows(app))
            (wrote,) = groups["weekly-report"]
            assert (
                wrote[2].replace("\n", "") == "doc:reports/weekly.md#this-week (not readable here)"
            )

            table = app.screen.query_one(GraphTable)
            table.move_cursor(row=_rows(app).index(wrote))
            await pilot.press("enter")
            await until(lambda: bool(app._notifications))
            (said,) = [n.message for n in app._notifications]
            assert said == "weekly-report runs on another home: it has no page here."
            assert isinstance(app.screen, GraphScreen)

            await pilot.press("z")
            await until(lambda: "only weekly-report and its neighbours" in _summary(app))
            await pilot.press("z")
            await until(lambda: "neighbours" not in _summary(app))
            table.move_cursor(row=_rows(app).index(groups["exec-summary"][0]))
            await pilot.press("z")
            await until(lambda: "only exec-summary and its neighbours" in _summary(app))
            await pilot.press("z")
            await until(lambda: "neighbours" not in _summary(app))
            assert "3 heinzels" in _summary(app)
    finally:
        await client.close()
