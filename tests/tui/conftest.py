"""Cockpit fixtures: deterministic homes, a pinned clock, snapshots kept in ``snapshots/``."""

from __future__ import annotations

import asyncio
import fcntl
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from tests.tui import homes

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
#: Snapshot homes live at a fixed path: the header shows it, so it must not vary per run.
SNAPSHOT_HOME = Path("/tmp/hz-cockpit-snapshots/home")
#: Session fixtures that build a home at a fixed path and hold its lock until the session ends.
SESSION_HOMES = frozenset({"snapshot_home_root", "team_view_root"})


class RepoSVGExtension(SVGImageExtension):
    """SVG snapshots in the repository's ``snapshots/`` folder, one subfolder per test module."""

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(SNAPSHOTS / test_location.basename)


@dataclass(eq=False, order=False, repr=False)
class RepoSnapshotAssertion(SnapshotAssertion):
    def use_extension(self, extension_class: Any = None) -> SnapshotAssertion:
        return super().use_extension(RepoSVGExtension)


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return RepoSnapshotAssertion(
        session=snapshot.session,
        extension_class=RepoSVGExtension,
        test_location=snapshot.test_location,
        update_snapshots=snapshot.update_snapshots,
    )


@pytest.fixture
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock pinned, and a full-colour terminal whatever ``TERM`` the test runs under
    (a low-colour one would choose the ANSI theme: ``tests/tui/test_terminals.py``)."""
    monkeypatch.setenv("HZ_NOW", homes.NOW)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLORTERM", "truecolor")


@pytest.fixture
def cockpit_home(home: Home, pinned_clock: None) -> Home:
    """The standard ten-heinzel home in the test's own folder."""
    asyncio.run(homes.build(home))
    return home


@pytest.fixture
async def client(cockpit_home: Home) -> AsyncIterator[LocalClient]:
    opened = await LocalClient.open(cockpit_home)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test on a fixed-path home built once per session runs on one xdist worker
    (``--dist loadgroup``): the home's lock is held for a worker's whole session, so a second
    worker that needed it would sit idle until the first one ended."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture in SESSION_HOMES.intersection(fixtures):
            item.add_marker(pytest.mark.xdist_group(fixture))


@pytest.fixture(scope="session")
def snapshot_home_root() -> Iterator[Path]:
    """The standard home at a fixed path, built once per session under a lock."""
    SNAPSHOT_HOME.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(SNAPSHOT_HOME.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(SNAPSHOT_HOME, ignore_errors=True)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HZ_NOW", homes.NOW)
            asyncio.run(homes.build(Home.resolve(SNAPSHOT_HOME, create=True)))
        yield SNAPSHOT_HOME


@pytest.fixture
def snapshot_client(
    snapshot_home_root: Path, pinned_clock: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Home, LocalClient]]:
    """A client on the fixed-path home, opened outside the app's loop as ``hz`` will."""
    monkeypatch.setenv("HZ_HOME", str(snapshot_home_root))
    home = Home.resolve(snapshot_home_root)
    opened = asyncio.run(LocalClient.open(home))
    try:
        yield home, opened
    finally:
        asyncio.run(opened.close())
