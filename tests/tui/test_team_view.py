"""Issue 17, in the cockpit: a team heinzel's row says who runs it, its page shows the lease and
the last team error.

Priya's home, built with real git: ``team-status`` is a team heinzel Theo's home holds (Priya
is its delegate), ``handbook`` names a team repository that is gone, ``notes`` is local. Both
homes ticked five minutes before the pinned clock. The homes live at a fixed path: the header
and the error line show it.
"""

from __future__ import annotations

import asyncio
import fcntl
import shutil
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot

from hz_kernel.client import LocalClient
from hz_kernel.contracts import ContractVersions, compile_contract
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import ContractApproved, ContractProposed, HeinzelCreated
from hz_tui.app import CockpitApp
from hz_tui.screens.heinzel import HeinzelScreen
from tests.support.team import make_team_repo, team_contract, team_home
from tests.tui import homes
from tests.tui.cells import row_text, screen_cells
from tests.tui.test_snapshots import loaded, then

ROOT = Path("/tmp/hz-cockpit-snapshots/team")
TICKED = datetime.fromisoformat(homes.NOW) - timedelta(minutes=5)
SCHEDULE = "0 15 * * FRI"
LOCAL = """---
name: notes
hz:
  schedule: "0 9 * * MON"
---
# Notes

### Goal

Keep my own notes.
"""


async def _create(kernel: Kernel, number: int, name: str, text: str) -> None:
    """A heinzel with a fixed id and its approved contract, written through the kernel."""
    writer = homes.Writer(kernel, number, name)
    compiled = compile_contract(text, source=f"{name}.prose.md")
    await writer.event(
        HeinzelCreated(name=name, namespace="team" if compiled.hz.team else "me"),
        TICKED - timedelta(minutes=10),
    )
    ContractVersions(kernel.home.heinzel_dir(writer.id)).write(1, text, compiled)
    proposed = ContractProposed(version=1, fingerprint=compiled.fingerprint, size=len(text))
    await writer.event(proposed, TICKED - timedelta(minutes=9))
    approved = ContractApproved(version=1, fingerprint=compiled.fingerprint)
    await writer.event(approved, TICKED - timedelta(minutes=8))


async def _build(root: Path) -> Path:
    team = make_team_repo(root)
    held = team_contract(team, schedule=SCHEDULE, delegates="[priya]")
    theo = await Kernel.open(Home.resolve(team_home(root / "theo", "theo")))
    try:
        await theo.new(text=held)
        await theo.approve(ref="team-status")
        await theo.tick_once(now=TICKED)
    finally:
        await theo.close()
    priya = await Kernel.open(Home.resolve(team_home(root / "priya", "priya")))
    try:
        await _create(priya, 1, "team-status", held)
        gone = team_contract(root / "gone.git", schedule=SCHEDULE, delegates="[priya]")
        await _create(priya, 2, "handbook", gone.replace("name: team-status", "name: handbook"))
        await _create(priya, 3, "notes", LOCAL)
        await priya.tick_once(now=TICKED)
    finally:
        await priya.close()
    return root / "priya"


@pytest.fixture(scope="session")
def team_view_root() -> Iterator[Path]:
    """Priya's home, built once per session under a lock of its own."""
    ROOT.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(ROOT.parent / "team.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(ROOT, ignore_errors=True)
        ROOT.mkdir(mode=0o700)
        with pytest.MonkeyPatch.context() as patch:  # pinned while building, not after
            patch.setenv("HZ_NOW", TICKED.isoformat())
            built = asyncio.run(_build(ROOT))
        yield built


@pytest.fixture
def team_client(
    team_view_root: Path, pinned_clock: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Home, LocalClient]]:
    monkeypatch.setenv("HZ_HOME", str(team_view_root))
    home = Home.resolve(team_view_root)
    opened = asyncio.run(LocalClient.open(home))
    try:
        yield home, opened
    finally:
        asyncio.run(opened.close())


def cockpit(home: Home, client: LocalClient) -> CockpitApp:
    app = CockpitApp(home, client, live=False)
    app.theme = "hz-dark"
    return app


def open_page(number: int) -> Callable[[Pilot[int]], Awaitable[None]]:
    """The pilot step that opens heinzel ``number``'s page and waits for its answer."""

    async def step(pilot: Pilot[int]) -> None:
        pilot.app.push_screen(HeinzelScreen(homes.heinzel_id(number)))
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    return step


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_team_marks_on_the_home(snap_compare, team_client, size: tuple[int, int]) -> None:
    home, client = team_client
    assert snap_compare(cockpit(home, client), terminal_size=size, run_before=loaded)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_team_page_of_a_heinzel_another_home_holds(
    snap_compare, team_client, size: tuple[int, int]
) -> None:
    home, client = team_client
    app = cockpit(home, client)
    assert snap_compare(app, terminal_size=size, run_before=then(open_page(1)))


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_team_page_of_a_heinzel_whose_repository_is_gone(
    snap_compare, team_client, size: tuple[int, int]
) -> None:
    home, client = team_client
    app = cockpit(home, client)
    assert snap_compare(app, terminal_size=size, run_before=then(open_page(2)))


async def test_without_colour_the_team_marks_are_characters(
    team_client: tuple[Home, LocalClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under NO_COLOR the holder, the failing repository and the error still read: ``@theo``,
    ``!`` after the name, and the page's error named ``Team error`` with its code."""
    monkeypatch.setenv("NO_COLOR", "1")
    home, client = team_client
    app = CockpitApp(home, client, live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        screen = [row_text(screen_cells(app), y) for y in range(40)]
        assert any("team-st" in line and "@theo" in line for line in screen)
        assert any("handbook @? !" in line for line in screen)
        assert not any("notes @" in line for line in screen)
        await open_page(2)(pilot)
        page = "\n".join(row_text(screen_cells(app), y) for y in range(40))
        assert "Team error" in page and "HZS105" in page
