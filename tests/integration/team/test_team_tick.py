"""Team heinzels in the tick, in-process, with real git: the lease before a turn, the token in
``turn.started`` and on the receipts, ``held-by`` skips, an owner offline, a stale owner refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from hz_kernel import api
from hz_kernel.cli.team import render_log
from hz_kernel.clock import stamp
from hz_kernel.commands.team import team_id
from hz_kernel.contracts import ContractError, compile_contract
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.team.lease import release
from hz_kernel.team.repo import TeamRepo
from hz_kernel.team.state_branch import StateBranch
from hz_kernel.tick.report import TickReport
from tests.support.env import hz_env
from tests.support.team import (
    make_team_repo,
    put_on_state,
    refs,
    run_git,
    team_contract,
    team_home,
)

T0 = datetime(2026, 11, 27, 9, 0, 30, tzinfo=UTC)
TICK = timedelta(minutes=10)


def spine(kernel: Kernel, name: str) -> list[dict[str, object]]:
    (heinzel,) = [p for p in (kernel.home.root / "heinzel").iterdir() if p.name.startswith("hz-")]
    raw = (heinzel / "session.jsonl").read_bytes()
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def started_tokens(kernel: Kernel) -> list[object]:
    return [
        e["data"].get("token") for e in spine(kernel, "team-status") if e["kind"] == "turn.started"
    ]  # type: ignore[union-attr]


async def open_home(
    root: Path,
    handle: str | None,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    schedule: str = "*/10 * * * *",
) -> Kernel:
    monkeypatch.setenv("HZ_NOW", "2026-11-27T08:00:00Z")
    kernel = await Kernel.open(Home.resolve(team_home(root, handle)))
    await kernel.new(text=team_contract(repo, schedule=schedule))
    await kernel.approve(ref="team-status")
    return kernel


async def tick(kernel: Kernel, at: datetime, monkeypatch: pytest.MonkeyPatch) -> TickReport:
    monkeypatch.setenv("HZ_NOW", at.isoformat())
    return await kernel.tick_once(now=at)


@pytest.fixture
async def homes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Kernel, Kernel, Path]]:
    repo = make_team_repo(tmp_path)
    priya = await open_home(tmp_path / "priya", "priya", repo, monkeypatch)
    theo = await open_home(tmp_path / "theo", "theo", repo, monkeypatch)
    yield priya, theo, repo
    await priya.close()
    await theo.close()


def test_a_team_key_needs_the_team_namespace_and_roster_handles(tmp_path: Path) -> None:
    text = team_contract(tmp_path / "team.git")
    compiled = compile_contract(text, source="contract")
    assert compiled.hz.team is not None and compiled.hz.team.delegates == ("theo",)

    with pytest.raises(ContractError) as mine:
        compile_contract(text.replace("namespace: team", "namespace: me"), source="contract")
    with pytest.raises(ContractError) as handle:
        compile_contract(text.replace("[theo]", '["Theo Smith"]'), source="contract")

    assert mine.value.code == "HZC102" and mine.value.place == "contract:6"
    assert handle.value.code == "HZC101" and "'Theo Smith'" in handle.value.message


async def test_the_owner_runs_each_slot_and_the_delegate_skips_it_held_by_the_owner(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, theo, repo = homes
    main = refs(repo)["refs/heads/main"]

    for slot in range(3):
        ran = await tick(priya, T0 + slot * TICK, monkeypatch)
        skipped = await tick(theo, T0 + slot * TICK, monkeypatch)
        assert [w.name for w in ran.woken] == ["team-status"] and ran.problems == []
        assert [(s.reason, s.holder) for s in skipped.skipped] == [("held-by", "priya")]

    assert started_tokens(priya) == [1, 1, 1]
    assert started_tokens(theo) == []
    held = [e["data"] for e in spine(theo, "team-status") if e["kind"] == "turn.skipped"]
    assert [(d["reason"], d["holder"]) for d in held] == [("held-by", "priya")] * 3  # type: ignore[index]
    shown = (await theo.show(ref="team-status")).turns
    assert [(t.disposition, t.reason, t.holder, t.report) for t in shown] == [
        ("skipped", "held-by", "priya", "skipped: held-by priya")
    ] * 3
    receipts = (await theo.team_log()).receipts
    assert [(r.name, r.receipt["kind"], r.receipt["token"]) for r in receipts] == [
        ("team-status", "turn.finished", 1)
    ] * 3
    assert {r.receipt["by"] for r in receipts} == {"priya"}
    assert render_log(api.TeamLog(receipts=receipts)).splitlines()[0].endswith("token 1  by priya")
    status = await priya.team_status()
    assert [(r.holder, r.token, r.held_here) for r in status.leases] == [("priya", 1, True)]
    assert status.pending == {str(repo): 0}
    assert refs(repo)["refs/heads/main"] == main


async def test_a_home_without_a_handle_defers_its_team_heinzel_with_one_coded_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_team_repo(tmp_path)
    kernel = await open_home(tmp_path / "nobody", None, repo, monkeypatch)
    try:
        report = await tick(kernel, T0, monkeypatch)
    finally:
        await kernel.close()

    assert report.woken == [] and [d.reason for d in report.deferred] == ["no-lease"]
    assert [(p.code, p.place) for p in report.problems] == [("HZS113", "team-status")]


async def test_an_owner_offline_runs_on_its_unexpired_lease_and_pushes_once_back(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, _theo, repo = homes
    await tick(priya, T0, monkeypatch)
    away = repo.with_name("away.git")
    repo.rename(away)

    offline = await tick(priya, T0 + TICK, monkeypatch)
    expired = await tick(priya, T0 + 3 * TICK, monkeypatch)
    state = StateBranch(priya.home.root, str(repo))
    queued = state.pending()
    away.rename(repo)
    back = await tick(priya, T0 + 4 * TICK, monkeypatch)

    assert [w.name for w in offline.woken] == ["team-status"]
    assert {p.code for p in offline.problems} == {"HZS105"}
    assert expired.woken == [] and [d.reason for d in expired.deferred] == ["no-lease"]
    assert len(queued) == 1 and back.problems == [] and state.pending() == []
    log = (await priya.team_log()).receipts
    assert len(log) == 3 and {r.receipt["token"] for r in log} == {1}


async def test_a_delegate_takes_over_after_two_silent_intervals_and_the_late_owner_is_refused(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, theo, repo = homes
    await tick(priya, T0, monkeypatch)
    away = repo.with_name("away.git")
    repo.rename(away)
    late = await tick(priya, T0 + TICK, monkeypatch)  # runs on its lease; cannot push
    shutil.move(away, repo)

    waiting = await tick(theo, T0 + TICK, monkeypatch)
    taken = await tick(theo, T0 + 2 * TICK, monkeypatch)
    back = await tick(priya, T0 + 2 * TICK + timedelta(seconds=5), monkeypatch)

    assert [w.name for w in late.woken] == ["team-status"]
    assert [(d.reason, d.holder) for d in waiting.deferred] == [("held-by", "priya")]
    assert [w.name for w in taken.woken] == ["team-status"] and started_tokens(theo) == [2]
    assert [(p.code, p.place.endswith(".turn.finished.json")) for p in back.problems] == [
        ("HZS104", True)
    ]
    assert back.problems[0].message == "token 1 is older than the lease's 2"
    assert back.woken == [] and [(s.reason, s.holder) for s in back.skipped] == [
        ("held-by", "theo")
    ]
    log = (await priya.team_log()).receipts
    assert [r.receipt["token"] for r in log] == [1, 2]


async def test_a_slot_the_owner_went_silent_before_runs_once_at_the_delegate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_team_repo(tmp_path)
    priya = await open_home(tmp_path / "priya", "priya", repo, monkeypatch, "0 * * * *")
    theo = await open_home(tmp_path / "theo", "theo", repo, monkeypatch, "0 * * * *")
    try:
        # 08:50:30 Priya renews until 09:10:30 and goes silent; the 09:00 slot fires after.
        await tick(priya, T0 - TICK, monkeypatch)
        waiting = await tick(theo, T0, monkeypatch)
        taken = await tick(theo, T0 + TICK, monkeypatch)
        after = await tick(theo, T0 + 2 * TICK, monkeypatch)
        back = await tick(priya, T0 + 2 * TICK, monkeypatch)
    finally:
        await priya.close()
        await theo.close()

    assert [(d.reason, d.holder) for d in waiting.deferred] == [("held-by", "priya")]
    assert waiting.skipped == [] and waiting.woken == []
    assert [w.name for w in taken.woken] == ["team-status"] and started_tokens(theo) == [2]
    assert after.woken == [] and back.woken == []
    assert [(s.reason, s.holder) for s in back.skipped] == [("held-by", "theo")]
    assert started_tokens(priya) == []


async def test_a_turn_asked_for_at_a_home_without_the_lease_is_refused_with_the_holder(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, theo, _repo = homes
    await tick(priya, T0, monkeypatch)
    await tick(theo, T0, monkeypatch)

    with pytest.raises(HzError) as refused:
        await theo.wake(ref="team-status")

    assert refused.value.code == "HZS115"
    assert "priya holds it until 2026-11-27T09:20:30Z" in refused.value.message
    assert started_tokens(theo) == []


async def test_a_force_pushed_hz_state_is_not_built_on_and_every_view_says_so(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, _theo, repo = homes
    await tick(priya, T0, monkeypatch)
    main = refs(repo)["refs/heads/main"]
    run_git(repo, "update-ref", "refs/heads/hz/state", main)

    report = await tick(priya, T0 + TICK, monkeypatch)
    status = await priya.team_status()
    log = await priya.team_log()

    assert [(p.code, p.place) for p in report.problems] == [("HZS117", str(repo))]
    assert refs(repo)["refs/heads/hz/state"] == main
    assert status.pending == {str(repo): 1}
    assert [line[:16] for line in status.problems] == ["HZS117: hz/state"]
    assert log.receipts == [] and [line[:16] for line in log.errors] == ["HZS117: hz/state"]


@pytest.mark.parametrize(
    "cursor",
    [{"seq": -5, "count": 999999}, {"seq": 999999, "count": 1}, {"seq": 1, "count": 999999}],
)
async def test_a_damaged_receipts_cursor_is_one_coded_problem_every_tick(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch, cursor: dict[str, int]
) -> None:
    priya, _theo, _repo = homes
    (path,) = [p for p in (priya.home.root / "heinzel").iterdir() if p.name.startswith("hz-")]
    cursors = priya.home.root / "team" / "cursors"
    cursors.mkdir(parents=True)
    (cursors / f"{path.name}.json").write_text(json.dumps(cursor))

    first = await tick(priya, T0, monkeypatch)
    second = await tick(priya, T0 + TICK, monkeypatch)

    for report in (first, second):
        assert [(p.code, p.place) for p in report.problems] == [
            ("HZS116", f"team-status: {cursors / path.name}.json")
        ]
    assert "the receipts cursor is damaged (" in first.problems[0].message
    assert (await priya.team_log()).receipts == []


async def test_team_log_names_each_file_on_hz_state_it_cannot_read(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, _theo, repo = homes
    await tick(priya, T0, monkeypatch)
    odd = f"receipts/{team_id('team-status')}/odd.json"
    put_on_state(repo, {odd: b""})

    log = await priya.team_log()

    assert len(log.receipts) == 1
    assert log.errors == [
        f"HZS118: {repo}: {odd}: not a receipt this hz reads, or larger than 64 KiB"
    ]


def hz(home: Path, at: datetime, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hz_kernel.cli", *args],
        capture_output=True,
        text=True,
        env=hz_env(home, HZ_NOW=at.isoformat()),
        timeout=120,
    )


async def test_hz_team_status_and_log_exit_1_with_a_coded_line_and_say_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_team_repo(tmp_path)
    priya = await open_home(tmp_path / "priya", "priya", repo, monkeypatch)
    nobody = await open_home(tmp_path / "nobody", None, repo, monkeypatch)
    theo = await open_home(tmp_path / "theo", "theo", repo, monkeypatch)
    ana = await open_home(tmp_path / "ana", "ana", repo, monkeypatch)  # never reads the repo
    await tick(priya, T0, monkeypatch)
    await tick(theo, T0, monkeypatch)
    for kernel in (priya, nobody, theo, ana):
        await kernel.close()
    later = T0 + 3 * TICK
    home = priya.home.root

    held = hz(home, T0 + TICK, "team", "status")
    expired = hz(home, later, "team", "status")
    release(TeamRepo(home, str(repo)), team_id("team-status"), handle="priya", now=T0 + TICK)
    released = hz(home, later, "team", "status")
    unplaced = hz(nobody.home.root, later, "team", "status")
    named = hz(nobody.home.root, later, "team", "log")
    repo.rename(repo.with_name("away.git"))
    shown = hz(theo.home.root, later, "heinzel", "show", "team-status")
    unread = hz(ana.home.root, later, "team", "log")

    assert held.returncode == 0 and "  held by priya (this home) until " in held.stdout
    assert expired.returncode == 0
    assert (
        "  expired at 2026-11-27T09:20:30Z (held by priya (this home)), token 1" in expired.stdout
    )
    assert released.returncode == 0
    assert f"  free since {stamp(T0 + TICK)} (released by priya), token 1" in released.stdout
    assert unplaced.returncode == 1 and unplaced.stderr.startswith("HZS113: team-status: ")
    assert "no team heinzels here" not in unplaced.stdout
    assert named.returncode == 0 and named.stdout.split("  ")[1:3] == [
        "team-status",
        "turn.finished",
    ]
    assert shown.returncode == 0 and "  skipped: held-by priya\n" in shown.stdout
    assert "[body pruned]" not in shown.stdout
    assert unread.returncode == 1 and unread.stderr.startswith("HZS105: git fetch: ")
    assert unread.stdout == "no receipts read: see the errors\n"


async def test_receipts_gone_from_hz_state_are_pushed_again_and_the_tick_says_so(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    priya, _theo, repo = homes
    await tick(priya, T0, monkeypatch)
    run_git(repo, "update-ref", "-d", "refs/heads/hz/state")

    report = await tick(priya, T0 + TICK, monkeypatch)

    assert [(p.code, p.place) for p in report.problems] == [("HZS119", str(repo))]
    assert report.problems[0].message.startswith("1 receipt(s) this home delivered were gone")
    assert len((await priya.team_log()).receipts) == 2


_WAITING_REMOTE = """#!{python}
import os, subprocess, sys, time

# ssh's stand-in: serve the command (git-upload-pack/receive-pack on a path) once the other
# team repository holds a lease, so this repository answers only if the other's step ran meanwhile.
deadline = time.monotonic() + 30
while not subprocess.run(
    ["git", "--git-dir=" + os.environ["HZ_TEST_OTHER_REPO"], "for-each-ref", "refs/hz/lease"],
    capture_output=True,
).stdout:
    if time.monotonic() > deadline:
        sys.exit("the other repository never got its lease")
    time.sleep(0.05)
os.execvp("sh", ["sh", "-c", sys.argv[-1]])
"""


async def test_a_hung_team_repository_holds_only_its_own_heinzels_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two team heinzels on two repositories: the first answers only after the second's lease is
    taken. Leases of different repositories are taken side by side, so both are taken in one tick;
    one after the other, the first would time out waiting for the second."""
    slow = make_team_repo(tmp_path / "slow")
    quick = make_team_repo(tmp_path / "quick")
    remote = tmp_path / "remote"
    remote.write_text(_WAITING_REMOTE.format(python=sys.executable))
    remote.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(remote))
    monkeypatch.setenv("GIT_SSH_VARIANT", "simple")
    monkeypatch.setenv("HZ_TEST_OTHER_REPO", str(quick))
    monkeypatch.setattr("hz_kernel.team.git.TIMEOUT_SECONDS", 20.0)
    monkeypatch.setenv("HZ_NOW", "2026-11-27T08:00:00Z")
    kernel = await Kernel.open(Home.resolve(team_home(tmp_path / "priya", "priya")))
    try:
        for name, repo in (("alpha", f"ssh://hang{slow}"), ("beta", str(quick))):
            await kernel.new(text=team_contract(repo).replace("team-status", name))
            await kernel.approve(ref=name)

        report = await tick(kernel, T0, monkeypatch)

        assert report.problems == []
        assert sorted(w.name for w in report.woken) == ["alpha", "beta"]
        for name, repo in (("alpha", slow), ("beta", quick)):
            assert f"refs/hz/lease/{team_id(name)}" in refs(repo)
    finally:
        await kernel.close()


async def test_an_owner_whose_clock_is_behind_the_delegate_s_is_told_so(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Theo took the heinzel over at 09:40 by his clock; Priya's clock says 09:10 when she is
    back, so her claims would lapse before his clock saw them: her tick says the clocks differ."""
    priya, theo, _ = homes
    await tick(priya, T0, monkeypatch)
    await tick(theo, T0 + 4 * TICK, monkeypatch)

    behind = await tick(priya, T0 + TICK, monkeypatch)
    in_step = await tick(priya, T0 + 4 * TICK + timedelta(seconds=30), monkeypatch)

    assert [(p.code, p.place) for p in behind.problems] == [("HZS125", "team-status")]
    assert behind.problems[0].message.startswith(
        "theo renewed the lease 30 min later than this home's clock says it is now"
    )
    assert in_step.problems == []


def test_new_and_approve_warn_about_a_team_heinzel_this_home_cannot_place(
    tmp_path: Path,
) -> None:
    """Without a handle or a repository, ``hz heinzel new`` and ``hz approve`` still succeed,
    each with one coded line per missing thing saying how to set it."""
    home = team_home(tmp_path / "nobody", None)
    contract = tmp_path / "team-status.prose.md"
    contract.write_text(
        team_contract("unused").replace('  team:\n    repo: "unused"\n', "  team:\n")
    )
    made = hz(home, T0, "heinzel", "new", str(contract))
    approved = hz(home, T0, "approve", "team-status")
    assert made.returncode == 0 and approved.returncode == 0, made.stderr + approved.stderr
    for done in (made, approved):
        lines = done.stderr.splitlines()
        assert [line.split(": ")[:2] for line in lines] == [
            ["HZS113", "team-status"],
            ["HZS114", "team-status"],
        ]
        assert "[team] handle" in lines[0] and "hz.team.repo" in lines[1]
    assert "proposed team-status" in made.stdout and "approved v1" in approved.stdout


async def test_a_placed_team_heinzel_is_quiet_until_an_amendment_drops_its_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", "2026-11-27T08:00:00Z")
    repo = make_team_repo(tmp_path)
    kernel = await Kernel.open(Home.resolve(team_home(tmp_path / "priya", "priya")))
    made = await kernel.new(text=team_contract(repo))
    first = await kernel.approve(ref="team-status")
    dropped = team_contract(repo).replace(f'    repo: "{repo}"\n', "")
    amended = await kernel.amend(ref="team-status", text=dropped)
    decided = await kernel.approve(ref=f"team-status@amendment:{amended.proposal}")
    await kernel.close()
    assert (made.warnings, first.warnings) == ([], [])
    assert [w.split(": ")[:2] for w in decided.warnings] == [["HZS114", "team-status"]]


async def test_a_home_behind_another_homes_amendment_is_told_to_make_it_here(
    homes: tuple[Kernel, Kernel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Priya approves v2; Theo's home keeps v1 and would run it when it takes over (found by
    the new-user pass). Its tick and ``hz team status`` say so (HZS126) from the receipts as
    last fetched, until Theo makes the same amendment."""
    priya, theo, repo = homes
    await tick(priya, T0, monkeypatch)
    await tick(theo, T0, monkeypatch)
    amended = team_contract(repo).replace("a short note", "a shorter note")
    await priya.amend(ref="team-status", text=amended)
    assert (await priya.approve(ref="team-status")).version == 2
    assert [p.code for p in (await tick(priya, T0 + TICK, monkeypatch)).problems] == []

    behind = (await tick(theo, T0 + TICK, monkeypatch)).problems
    assert [(p.code, p.place, p.message) for p in behind] == [
        (
            "HZS126",
            "team-status",
            "priya's home runs team-status v2; this home has v1: make the same amendment here",
        )
    ]
    status = await theo.team_status()
    assert [line.split(": ")[0] for line in status.problems] == ["HZS126"]
    assert [p.code for p in (await tick(priya, T0 + 2 * TICK, monkeypatch)).problems] == []

    await theo.amend(ref="team-status", text=amended)
    await theo.approve(ref="team-status")
    caught_up = (await tick(theo, T0 + 2 * TICK, monkeypatch)).problems
    assert caught_up == []
    assert (await theo.team_status()).problems == []
    theirs = [r.receipt for r in (await priya.team_log()).receipts if r.receipt.get("by") == "theo"]
    assert [(r["kind"], r["version"], r["token"]) for r in theirs] == [("contract.amended", 2, 0)]
