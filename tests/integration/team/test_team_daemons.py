"""Issue 17's "must show", with real daemons: two homes and one bare repository on disk, one team
heinzel with a schedule, every clock pinned to a file the test moves one slot at a time.

Over 20 slots exactly one turn runs per slot (Priya's, the owner); a slot Priya runs while her
remote is unreachable is pushed at the next tick. Then her daemon runs one slot offline and is
stopped (SIGSTOP): Theo, the delegate, takes the lease over two intervals after her last renewal;
woken again (SIGCONT), she sees the newer token, her queued receipt with the old token is refused,
and she claims her heinzel back: Theo's daemon hands the lease back and hers runs the next slots.
``main`` is never touched. And two daemons ticking at the same instant on an expired lease end,
round after round, with exactly one holder and one turn.
"""

from __future__ import annotations

import asyncio
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.team import TeamDaemon, daemons, make_team_repo, refs, team_contract, team_home

BASE = datetime(2026, 11, 27, 9, 0, 20, tzinfo=UTC)
SLOT = timedelta(minutes=10)


__all__ = ["daemons"]


def slot(index: int) -> datetime:
    return BASE + index * SLOT


def tokens(home: Path) -> list[int]:
    """The fencing token of each turn this home ran."""
    (spine,) = (home / "heinzel").glob("hz-*/session.jsonl")
    events = [orjson.loads(line) for line in spine.read_bytes().splitlines() if line.strip()]
    return [e["data"].get("token") for e in events if e["kind"] == "turn.started"]


async def make_home(
    root: Path, handle: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> TeamDaemon:
    monkeypatch.setenv("HZ_NOW", "2026-11-27T08:00:00Z")
    kernel = await Kernel.open(Home.resolve(team_home(root, handle)))
    try:
        await kernel.new(text=team_contract(repo))
        await kernel.approve(ref="team-status")
    finally:
        await kernel.close()
    daemon = TeamDaemon(root)
    daemon.set_clock(datetime(2026, 11, 27, 8, 0, tzinfo=UTC))
    return daemon


async def test_two_daemons_run_each_slot_once_and_the_delegate_takes_over_a_stopped_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, daemons: list[TeamDaemon]
) -> None:
    bare = make_team_repo(tmp_path)
    main = refs(bare)["refs/heads/main"]
    link = tmp_path / "priya-view.git"  # Priya's way to the repository: taken away to go offline
    link.symlink_to(bare)
    priya = await make_home(tmp_path / "priya", "priya", f"file://{link}", monkeypatch)
    theo = await make_home(tmp_path / "theo", "theo", str(bare), monkeypatch)
    for daemon in (priya, theo):
        daemon.start()
        daemons.append(daemon)

    runs: list[list[str]] = []
    for index in range(20):
        if index == 10:
            link.unlink()
        for daemon in (priya, theo):
            daemon.set_clock(slot(index))
        ran = await priya.tick()
        skipped = await theo.tick()
        if not link.exists():
            link.symlink_to(bare)
        runs.append([w.name for w in ran.woken + skipped.woken])
        if index == 10:
            # Priya ran it on her unexpired lease but could not renew it: until she does,
            # Theo cannot tell whether she decided the slot, so he waits instead of skipping.
            assert [(d.reason, d.holder) for d in skipped.deferred] == [("held-by", "priya")]
            assert {p.code for p in ran.problems} == {"HZS105"}, ran.problems
        else:
            assert [(s.reason, s.holder) for s in skipped.skipped] == [("held-by", "priya")]
            assert ran.problems == [] and skipped.problems == [], (ran.problems, skipped.problems)

    assert runs == [["team-status"]] * 20
    log = orjson.loads(theo.hz("team", "log", "--json").stdout)["receipts"]
    assert len(log) == 20 and {r["receipt"]["token"] for r in log} == {1}

    # Slot 20: Priya runs offline (her last renewal was slot 19's), then her machine sleeps.
    link.unlink()
    for daemon in (priya, theo):
        daemon.set_clock(slot(20))
    offline = await priya.tick()
    held = await theo.tick()
    priya.signal(signal.SIGSTOP)
    link.symlink_to(bare)
    theo.set_clock(slot(21))
    taken = await theo.tick()

    assert [w.name for w in offline.woken] == ["team-status"]
    assert [(d.reason, d.holder) for d in held.deferred] == [("held-by", "priya")]
    assert [w.name for w in taken.woken] == ["team-status"] and tokens(theo.home) == [2]

    # Slot 22: Priya wakes; she sees Theo's newer token and her stale receipt is refused. Theo
    # has not ticked since the slot fired, so she waits for him, and claims her heinzel back.
    # Theo's tick hands the lease back instead of running; Priya takes it over and runs slot 22.
    priya.signal(signal.SIGCONT)
    for daemon in (priya, theo):
        daemon.set_clock(slot(22))
    back = await priya.tick()
    released = await theo.tick()
    priya.set_clock(slot(22) + timedelta(seconds=5))
    retaken = await priya.tick()
    for daemon in (priya, theo):
        daemon.set_clock(slot(23))
    owner = await priya.tick()
    delegate = await theo.tick()

    assert back.woken == [] and [(d.reason, d.holder) for d in back.deferred] == [
        ("held-by", "theo")
    ]
    assert [p.code for p in back.problems] == ["HZS104"]
    assert released.woken == [] and [d.reason for d in released.deferred] == ["no-lease"]
    assert [w.name for w in retaken.woken] == ["team-status"] and retaken.problems == []
    assert [w.name for w in owner.woken] == ["team-status"]
    assert [(s.reason, s.holder) for s in delegate.skipped] == [("held-by", "priya")]
    assert tokens(priya.home) == [1] * 21 + [3, 3] and tokens(theo.home) == [2]
    status = orjson.loads(theo.hz("team", "status", "--json").stdout)
    assert [(r["holder"], r["token"], r["held_here"]) for r in status["leases"]] == [
        ("priya", 3, False)
    ]
    log = orjson.loads(priya.hz("team", "log", "--json").stdout)["receipts"]
    assert [r["receipt"]["token"] for r in log] == [1] * 20 + [2, 3, 3]
    assert refs(bare)["refs/heads/main"] == main


async def test_two_daemons_racing_for_an_expired_lease_end_with_exactly_one_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, daemons: list[TeamDaemon]
) -> None:
    bare = make_team_repo(tmp_path)
    priya = await make_home(tmp_path / "priya", "priya", str(bare), monkeypatch)
    theo = await make_home(tmp_path / "theo", "theo", str(bare), monkeypatch)
    for daemon in (priya, theo):
        daemon.start()
        daemons.append(daemon)

    for round_ in range(6):
        at = slot(3 * round_)  # both silent for three intervals: whoever held the lease, it expired
        for daemon in (priya, theo):
            daemon.set_clock(at)
        reports = await asyncio.gather(priya.tick(), theo.tick())
        ran = [
            handle
            for handle, report in zip(("priya", "theo"), reports, strict=True)
            if report.woken
        ]
        (winner,) = ran
        (loser,) = [r for h, r in zip(("priya", "theo"), reports, strict=True) if h != winner]
        assert [(s.reason, s.holder) for s in loser.skipped] == [("held-by", winner)]
        status = orjson.loads(priya.hz("team", "status", "--json").stdout)["leases"]
        assert [r["holder"] for r in status] == [winner]

    assert len(tokens(priya.home)) + len(tokens(theo.home)) == 6
