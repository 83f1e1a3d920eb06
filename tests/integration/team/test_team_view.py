"""Issue 17, seen from the list: a team heinzel's lease and last team error on the listing and
``show`` rows (from what the tick recorded, never a git call), and in ``hz heinzel list|show``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from hz_kernel.commands.team import team_id
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.team import git as team_git
from hz_kernel.team.lease import release
from hz_kernel.team.repo import TeamRepo
from tests.support.env import hz_env
from tests.support.team import make_team_repo, team_contract, team_home

T0 = datetime(2026, 11, 27, 9, 0, 30, tzinfo=UTC)
NOW = "2026-11-27T09:05:00Z"
LOCAL = """---
name: team-status
hz:
  schedule: "0 9 * * MON"
---
# Notes

### Goal

Keep my own notes.
"""


async def open_home(root: Path, handle: str | None, monkeypatch: pytest.MonkeyPatch) -> Kernel:
    monkeypatch.setenv("HZ_NOW", "2026-11-27T08:00:00Z")
    return await Kernel.open(Home.resolve(team_home(root, handle)))


async def add(kernel: Kernel, text: str, name: str) -> None:
    await kernel.new(text=text.replace("name: team-status", f"name: {name}"))
    await kernel.approve(ref=name)


@pytest.fixture
async def theo_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Kernel, Path]]:
    """Priya's home, a delegate of ``team-status`` (Theo's home holds its lease) and of
    ``handbook``, whose repository is gone; and a local heinzel. Both homes ticked at T0."""
    repo = make_team_repo(tmp_path)
    theo = await open_home(tmp_path / "theo", "theo", monkeypatch)
    await add(theo, team_contract(repo, delegates="[priya]"), "team-status")
    priya = await open_home(tmp_path / "priya", "priya", monkeypatch)
    await add(priya, team_contract(repo, delegates="[priya]"), "team-status")
    await add(priya, team_contract(tmp_path / "gone.git", delegates="[priya]"), "handbook")
    await add(priya, LOCAL, "notes")
    monkeypatch.setenv("HZ_NOW", T0.isoformat())
    await theo.tick_once(now=T0)
    await priya.tick_once(now=T0)
    await theo.close()
    yield priya, tmp_path
    await priya.close()


async def test_the_listing_carries_the_lease_seen_and_the_team_error_without_git(
    theo_holds: tuple[Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, root = theo_holds
    monkeypatch.setenv("HZ_NOW", NOW)

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("the listing ran git")

    monkeypatch.setattr(team_git.subprocess, "Popen", no_git)
    rows = {h.name: h for h in (await priya.list_heinzels()).items}

    assert rows["notes"].team is None
    held = rows["team-status"].team
    assert held is not None
    assert (held.role, held.holder, held.token, held.held_here) == ("delegate", "theo", 1, False)
    assert held.expires == "2026-11-27T09:20:30Z" and held.free is None and held.error is None
    assert held.repo == str(root / "team.git") and held.seen_at == "2026-11-27T09:00:30Z"
    broken = rows["handbook"].team
    assert broken is not None and broken.holder is None
    assert broken.error_code == "HZS105" and broken.error is not None
    assert broken.error.startswith("HZS105: ") and "gone.git" in broken.error
    assert (await priya.show(ref="team-status")).heinzel.team == held


async def test_a_lease_that_ran_out_reads_free_and_a_missing_handle_is_an_error(
    theo_holds: tuple[Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, _ = theo_holds
    monkeypatch.setenv("HZ_NOW", (T0 + timedelta(hours=1)).isoformat())
    held = (await priya.show(ref="team-status")).heinzel.team
    assert held is not None and held.free == "expired" and held.holder == "theo"

    (priya.home.root / "hz.toml").write_text("[daemon]\ntick_seconds = 600\n")
    priya.home.__dict__.pop("settings", None)
    unplaced = (await priya.show(ref="team-status")).heinzel.team
    assert unplaced is not None and unplaced.error_code == "HZS113"
    assert unplaced.role is None, "with no handle the home's role is unknown, not owner"


async def test_hz_team_status_brings_the_listing_up_to_date(
    theo_holds: tuple[Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Theo hands the lease back after Priya's tick: the listing still shows what the tick saw
    until ``hz team status`` fetches the lease again."""
    priya, root = theo_holds
    later = T0 + timedelta(minutes=2)
    theos = TeamRepo(root / "theo", str(root / "team.git"))
    assert release(theos, team_id("team-status"), handle="theo", now=later) is not None
    monkeypatch.setenv("HZ_NOW", (later + timedelta(seconds=30)).isoformat())

    before = (await priya.show(ref="team-status")).heinzel.team
    await priya.team_status()
    after = (await priya.show(ref="team-status")).heinzel.team

    assert before is not None and (before.free, before.who) == (None, "theo")
    assert after is not None and (after.free, after.who) == ("released", "free")
    assert after.seen_at == "2026-11-27T09:03:00Z"


def hz(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hz_kernel.cli", *args],
        capture_output=True,
        text=True,
        env=hz_env(home, HZ_NOW=NOW),
        timeout=120,
    )


async def test_hz_heinzel_list_and_show_say_who_holds_a_team_heinzel(
    theo_holds: tuple[Kernel, Path],
) -> None:
    priya, root = theo_holds
    await priya.close()
    home = priya.home.root

    listed = hz(home, "heinzel", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split()[-1] == "TEAM" and all(len(line) <= 80 for line in lines)
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert by_name["team-status"].endswith("theo")
    assert by_name["handbook"].endswith("! HZS105")
    assert by_name["notes"].rstrip().endswith("0.00")

    shown = hz(home, "heinzel", "show", "team-status")
    assert shown.returncode == 0, shown.stderr
    assert (
        f"team: {root / 'team.git'} (delegate here)\n"
        "  lease: held by theo until 2026-11-27T09:20:30Z, token 1 (as of 2026-11-27T09:00:30Z)\n"
    ) in shown.stdout
    broken = hz(home, "heinzel", "show", "handbook").stdout
    assert "  error: HZS105: " in broken and "gone.git" in broken

    as_json = orjson.loads(hz(home, "heinzel", "list", "--json").stdout)
    teams = {item["name"]: item["team"] for item in as_json}
    assert teams["notes"] is None and teams["team-status"]["holder"] == "theo"
