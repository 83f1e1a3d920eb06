"""Priya and Theo share the team's weekly report heinzel, each on their own machine, with the
local model, real git, real files and a real daemon each; Theo is the delegate.

Mon both homes approve the same contract (owner: Priya); what the notes and Wednesday's merged
PRs wake runs on Priya's daemon only (Theo's skips it, held by her). Thu afternoon Priya's machine
goes to sleep (SIGSTOP) with her lease renewed until 16:00. Fri 15:00 Theo's daemon finds the lease
expired, takes it over (token 2) and runs the slot: the draft lands in Theo's report and the
receipts on the team repository's ``hz/state``. Priya's machine wakes at 15:30: her daemon sees
Theo's lease, skips the slot (``held-by`` theo) and does not run it again, and ``hz team log``
shows Theo's receipts to her.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from hz_kernel.contracts import render_template
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, checkout_repo, make_world
from tests.support.team import TeamDaemon, daemons, make_team_repo, refs

HOUR = 3600


__all__ = ["daemons"]


def team_weekly_report(world: World, team: Path) -> str:
    """The weekly report template as a team heinzel: Priya owns it, Theo stands in."""
    text = render_template(
        "weekly-report",
        {"repo": str(checkout_repo(world)), "notes": "notes", "document": "reports/weekly.md"},
    )
    team_key = f'namespace: team\nhz:\n  team:\n    repo: "{team}"\n    delegates: [theo]\n'
    return text.replace("\nhz:\n", "\n" + team_key, 1)


async def machine(
    root: Path, handle: str, team: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[World, TeamDaemon]:
    world = make_world(root)
    with (world.home / "hz.toml").open("a") as settings:
        settings.write(f'[team]\nhandle = "{handle}"\n')
    monkeypatch.setenv("HZ_NOW", "2026-10-26T09:00:00Z")
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        await kernel.new(text=team_weekly_report(world, team))
        await kernel.approve(ref="weekly-report")
    finally:
        await kernel.close()
    daemon = TeamDaemon(world.home, tick_seconds=HOUR)
    daemon.set_clock(datetime(2026, 10, 26, 9, 0, tzinfo=UTC))
    return world, daemon


def turns_started(world: World) -> list[dict[str, object]]:
    (spine,) = (world.home / "heinzel").glob("hz-*/session.jsonl")
    events = [orjson.loads(line) for line in spine.read_bytes().splitlines() if line.strip()]
    return [e["data"] for e in events if e["kind"] == "turn.started"]


async def test_theo_runs_fridays_slot_while_priyas_machine_sleeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, daemons: list[TeamDaemon]
) -> None:
    monkeypatch.setenv("HZ_LOCAL_USD_PER_MTOK", "2")
    team = make_team_repo(tmp_path)
    main = refs(team)["refs/heads/main"]
    priya_world, priya = await machine(tmp_path / "priya", "priya", team, monkeypatch)
    theo_world, theo = await machine(tmp_path / "theo", "theo", team, monkeypatch)
    for daemon in (priya, theo):
        daemon.start()
        daemons.append(daemon)

    # Thu 14:00: the PRs merged on Wednesday wake Priya's turn (Theo's daemon skips it, held by
    # her); she holds the lease until 16:00; then her machine sleeps
    for daemon in (priya, theo):
        daemon.set_clock(datetime(2026, 10, 29, 14, 0, tzinfo=UTC))
        assert (await daemon.tick()).problems == []
    priya.signal(signal.SIGSTOP)

    # Fri 15:00: Theo's daemon takes the expired lease over and runs the slot
    theo.set_clock(datetime(2026, 10, 30, 15, 0, 30, tzinfo=UTC))
    friday = await theo.tick()
    assert [w.name for w in friday.woken] == ["weekly-report"] and friday.problems == []
    assert [t.get("token") for t in turns_started(theo_world)] == [2]
    assert "DRAFT (weekly-report v1)" in (theo_world.reports / "weekly.md").read_text()

    # Fri 15:30: Priya's machine wakes; her daemon sees Theo's lease and does not run the slot
    priya.signal(signal.SIGCONT)
    priya.set_clock(datetime(2026, 10, 30, 15, 30, tzinfo=UTC))
    back = await priya.tick()
    assert back.woken == [] and back.problems == []
    assert [(s.name, s.reason, s.holder) for s in back.skipped] == [
        ("weekly-report", "held-by", "theo")
    ]
    assert {(t["cause"], t["token"]) for t in turns_started(priya_world)} == {("source-changed", 1)}

    log = priya.hz("team", "log")
    assert log.returncode == 0, log.stderr
    lines = log.stdout.splitlines()
    assert len(lines) == 2 * (len(turns_started(priya_world)) + 1)  # a turn and a draft each
    theos = [line.split("  ")[1:3] for line in lines if line.endswith("token 2  by theo")]
    assert theos == [["weekly-report", "draft.placed"], ["weekly-report", "turn.finished"]]
    assert "drafted (schedule)" in lines[-1] and lines[-1].endswith("token 2  by theo")
    status = priya.hz("team", "status")
    assert status.stdout.startswith("weekly-report  owner  held by theo until 2026-10-30T17:00:30Z")
    assert refs(team)["refs/heads/main"] == main
