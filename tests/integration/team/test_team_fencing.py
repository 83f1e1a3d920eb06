"""Team leases against what goes wrong in ordinary use, with real git, in-process kernels:
a turn whose lease ran out while it ran places nothing, two homes sharing a handle do not both
run, only the owner's claim gets a heinzel back, and a team repository path that loops stops
nothing but its own heinzel."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from hz_kernel.commands.team import team_id
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.team.lease import acquire_or_renew, claim, read_lease
from hz_kernel.team.repo import TeamRepo
from hz_kernel.tick.report import TickReport
from tests.support.homes import digest_contract, make_world
from tests.support.team import make_team_repo, team_contract, team_home

T0 = datetime(2026, 11, 27, 9, 0, 30, tzinfo=UTC)
TICK = timedelta(minutes=10)


def _as_team(text: str, repo: Path | str) -> str:
    team = f'namespace: team\nhz:\n  team:\n    repo: "{repo}"\n    delegates: [theo]\n'
    return text.replace("\nhz:\n", "\n" + team, 1)


def _events(home: Path, kind: str) -> list[dict[str, object]]:
    (spine,) = (home / "heinzel").glob("hz-*/session.jsonl")
    lines = [orjson.loads(line) for line in spine.read_bytes().splitlines() if line.strip()]
    return [e["data"] for e in lines if e["kind"] == kind]


async def _tick(kernel: Kernel, at: datetime, monkeypatch: pytest.MonkeyPatch) -> TickReport:
    monkeypatch.setenv("HZ_NOW", at.isoformat())
    return await kernel.tick_once(now=at)


async def _home(
    root: Path, handle: str, text: str, monkeypatch: pytest.MonkeyPatch, name: str
) -> Kernel:
    monkeypatch.setenv("HZ_NOW", "2026-11-27T08:00:00Z")
    kernel = await Kernel.open(Home.resolve(team_home(root, handle)))
    await kernel.new(text=text)
    await kernel.approve(ref=name)
    return kernel


async def test_a_turn_whose_lease_ran_out_while_it_ran_places_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_team_repo(tmp_path)
    world = make_world(tmp_path / "priya")
    with (world.home / "hz.toml").open("a") as settings:
        settings.write('[daemon]\ntick_seconds = 600\n[team]\nhandle = "priya"\n')
    monkeypatch.setenv("HZ_NOW", "2026-11-27T08:00:00Z")
    priya = await Kernel.open(Home.resolve(world.home))
    hold = tmp_path / "hold"
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(hold))
    try:
        await priya.new(text=_as_team(digest_contract(), repo))
        await priya.approve(ref="notes-digest")
        await _tick(priya, T0, monkeypatch)
        steps = len(_events(world.home, "step.done"))
        hold.touch()
        asked = asyncio.create_task(priya.wake(ref="notes-digest"))
        while len(_events(world.home, "step.done")) == steps and not asked.done():
            await asyncio.sleep(0.05)
        # Priya's machine sleeps mid-turn past her lease; Theo's home takes it over.
        later = T0 + 3 * TICK
        monkeypatch.setenv("HZ_NOW", later.isoformat())
        theo = TeamRepo(tmp_path / "theo", str(repo))
        taken = await asyncio.to_thread(
            acquire_or_renew, theo, team_id("notes-digest"), handle="theo", now=later, ttl=TICK
        )
        hold.unlink()
        await asked
    finally:
        await priya.close()

    assert (taken.how, taken.lease.token) == ("took-over", 2)
    started = _events(world.home, "turn.started")[-1]
    finished = _events(world.home, "turn.finished")[-1]
    assert (started["cause"], started["token"]) == ("asked", 1)
    assert finished["disposition"] == "failed" and "HZS121" in str(finished.get("reason"))
    (spine,) = (world.home / "heinzel").glob("hz-*/session.jsonl")
    lines = [orjson.loads(line) for line in spine.read_bytes().splitlines()]
    asked_turn = [e["turn"] for e in lines if e["kind"] == "turn.started"][-1]
    assert [
        e["kind"] for e in lines if e["turn"] == asked_turn and e["kind"].startswith("effect")
    ] == []


async def test_two_homes_sharing_a_handle_do_not_both_run_and_are_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_team_repo(tmp_path)
    first = await _home(tmp_path / "a", "priya", team_contract(repo), monkeypatch, "team-status")
    second = await _home(tmp_path / "b", "priya", team_contract(repo), monkeypatch, "team-status")
    try:
        ran = await _tick(first, T0, monkeypatch)
        refused = await _tick(second, T0, monkeypatch)
    finally:
        await first.close()
        await second.close()

    assert [w.name for w in ran.woken] == ["team-status"]
    assert refused.woken == [] and [d.reason for d in refused.deferred] == ["no-lease"]
    assert [p.code for p in refused.problems] == ["HZS120"]
    assert "give each home its own [team] handle" in refused.problems[0].message
    assert _events(tmp_path / "b", "turn.started") == []


async def test_only_the_owners_claim_gets_the_lease_back_from_the_delegate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_team_repo(tmp_path)
    priya = await _home(
        tmp_path / "priya", "priya", team_contract(repo), monkeypatch, "team-status"
    )
    theo = await _home(tmp_path / "theo", "theo", team_contract(repo), monkeypatch, "team-status")
    stranger = TeamRepo(tmp_path / "mallory", str(repo))
    try:
        await _tick(priya, T0, monkeypatch)
        taken = await _tick(theo, T0 + 3 * TICK, monkeypatch)
        claim(stranger, team_id("team-status"), handle="mallory", now=T0 + 4 * TICK)
        kept = await _tick(theo, T0 + 4 * TICK, monkeypatch)
        asked = await _tick(priya, T0 + 4 * TICK + timedelta(seconds=5), monkeypatch)
        released = await _tick(theo, T0 + 5 * TICK, monkeypatch)
        back = await _tick(priya, T0 + 5 * TICK + timedelta(seconds=5), monkeypatch)
    finally:
        await priya.close()
        await theo.close()

    assert [w.name for w in taken.woken] == ["team-status"]
    assert [w.name for w in kept.woken] == ["team-status"], "a stranger's claim counts for nothing"
    assert [(s.reason, s.holder) for s in asked.skipped] == [("held-by", "theo")]
    assert released.woken == [] and [d.reason for d in released.deferred] == ["no-lease"]
    assert [w.name for w in back.woken] == ["team-status"]
    lease = read_lease(TeamRepo(tmp_path / "priya", str(repo)), team_id("team-status"))
    assert lease is not None and (lease.holder, lease.token, lease.owner) == ("priya", 3, "priya")


async def test_a_team_repository_path_that_loops_stops_only_its_own_heinzel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_team_repo(tmp_path)
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    home = await _home(tmp_path / "priya", "priya", team_contract(repo), monkeypatch, "team-status")
    try:
        looped = team_contract(tmp_path / "loop1").replace("team-status", "team-loop")
        await home.new(text=looped)
        await home.approve(ref="team-loop")
        report = await _tick(home, T0, monkeypatch)
        status = await home.team_status()
    finally:
        await home.close()

    assert [w.name for w in report.woken] == ["team-status"]
    assert [(p.code, p.place) for p in report.problems] == [("HZS105", "team-loop: git fetch")]
    assert [d.name for d in report.deferred] == ["team-loop"]
    assert [(r.name, r.error is not None) for r in status.leases] == [
        ("team-loop", True),
        ("team-status", False),
    ]
