"""hz/state with real git: receipts land on the orphan branch, and nothing else moves."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from hz_kernel.errors import HzError
from hz_kernel.team import git as git_module
from hz_kernel.team.lease import acquire_or_renew
from hz_kernel.team.receipts import parse_receipt
from hz_kernel.team.repo import TeamRepo
from hz_kernel.team.state_branch import MAX_RECEIPT, StateBranch
from tests.support.team import (
    HEINZEL,
    OTHER,
    T0,
    finished,
    hz_commit,
    make_team_repo,
    placed,
    put_on_state,
    refs,
    run_git,
)

TTL = timedelta(minutes=2)


@pytest.fixture
def team(tmp_path: Path) -> Path:
    return make_team_repo(tmp_path)


def branch(tmp_path: Path, team: Path, who: str = "priya") -> StateBranch:
    return StateBranch(tmp_path / who, str(team))


def on_state(team: Path) -> dict[str, bytes]:
    """Every file on hz/state with its bytes."""
    names = run_git(team, "ls-tree", "-r", "--name-only", "refs/heads/hz/state").split()
    return {name: run_git(team, "cat-file", "blob", f"hz/state:{name}").encode() for name in names}


def test_receipts_land_on_hz_state_and_main_is_untouched(tmp_path: Path, team: Path) -> None:
    main_before = run_git(team, "cat-file", "-p", "refs/heads/main")
    before = refs(team)
    state = branch(tmp_path, team)
    receipts = [finished("01JDTURN01"), placed("01JDTURN01")]
    state.queue(receipts)

    result = state.push_pending(now=T0)

    assert result.delivered == sorted(r.path for r in receipts)
    assert result.queued == [] and result.error is None
    assert on_state(team) == {r.path: r.to_bytes() for r in receipts}
    after = refs(team)
    assert after.pop("refs/heads/hz/state")
    assert after == before
    assert run_git(team, "cat-file", "-p", "refs/heads/main") == main_before
    assert run_git(team, "rev-list", "--count", "refs/heads/hz/state") == "1\n"
    orphan = subprocess.run(["git", f"--git-dir={team}", "merge-base", "main", "hz/state"])
    assert orphan.returncode == 1, "hz/state shares history with main"
    cached = refs(state.repo.git_dir)
    assert not any(ref.startswith("refs/heads/") for ref in cached), cached
    assert state.pending() == []


def test_commits_carry_hz_not_the_user(
    tmp_path: Path, team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(variable, "Priya Raman")
    for variable in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(variable, "priya@example.org")
    settings = tmp_path / "gitconfig"
    settings.write_text(
        "[user]\n\tname = Priya Raman\n\temail = priya@example.org\n\tsigningkey = priya\n"
        "[commit]\n\tgpgSign = true\n[push]\n\tgpgSign = true\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(settings))
    state = branch(tmp_path, team)
    state.queue([finished("01JDTURN01")])
    assert state.push_pending(now=T0).error is None
    acquire_or_renew(state.repo, HEINZEL, handle="priya", now=T0, ttl=TTL)

    header = run_git(team, "cat-file", "-p", "hz/state") + run_git(
        team, "cat-file", "-p", f"refs/hz/lease/{HEINZEL}"
    )
    assert "Priya" not in header and "example.org" not in header and "gpgsig" not in header
    assert "author hz <hz@localhost>" in header and "committer hz <hz@localhost>" in header


def test_the_same_receipt_twice_is_delivered_once(tmp_path: Path, team: Path) -> None:
    state = branch(tmp_path, team)
    state.queue([finished("01JDTURN01")])
    state.push_pending(now=T0)
    tip = run_git(team, "rev-parse", "hz/state")

    state.queue([finished("01JDTURN01")])
    again = state.push_pending(now=T0 + TTL)

    assert again.delivered == [finished("01JDTURN01").path]
    assert run_git(team, "rev-parse", "hz/state") == tip
    assert state.pending() == []


@pytest.mark.parametrize("form", ["path", "url"])
def test_an_unreachable_remote_keeps_receipts_queued_then_delivers_each_once(
    tmp_path: Path, team: Path, form: str
) -> None:
    state = StateBranch(tmp_path / "priya", str(team) if form == "path" else f"file://{team}")
    state.queue([finished("01JDTURN00")])
    state.push_pending(now=T0)
    away = tmp_path / "away.git"
    team.rename(away)
    queued = [finished("01JDTURN01"), placed("01JDTURN01"), finished("01JDTURN02")]
    state.queue(queued)

    offline = state.push_pending(now=T0 + TTL)

    assert offline.delivered == []
    assert offline.queued == sorted(r.path for r in queued)
    assert offline.error is not None and offline.error.startswith("HZS105: git fetch: fatal: ")
    assert "\n" not in offline.error
    assert state.pending() == offline.queued

    away.rename(team)
    first = state.push_pending(now=T0 + 2 * TTL)
    second = state.push_pending(now=T0 + 3 * TTL)

    assert first.delivered == offline.queued and first.error is None
    assert second.delivered == [] and second.queued == []
    assert sorted(on_state(team)) == sorted([finished("01JDTURN00").path, *offline.queued])
    assert run_git(team, "rev-list", "--count", "hz/state") == "2\n"


def test_a_remote_that_never_existed_keeps_receipts_queued(tmp_path: Path) -> None:
    state = StateBranch(tmp_path / "priya", "file:///nonexistent/team.git")
    state.queue([finished("01JDTURN01")])

    result = state.push_pending(now=T0)

    assert result.queued == [finished("01JDTURN01").path]
    assert result.error is not None and result.error.startswith("HZS105")
    assert state.pending() == result.queued


def test_a_writer_that_lost_the_race_rebuilds_on_the_new_tip(tmp_path: Path, team: Path) -> None:
    priya, theo = branch(tmp_path, team, "priya"), branch(tmp_path, team, "theo")
    priya.queue([finished("01JDTURN01")])
    theo.queue([finished("01JDTURN02", heinzel=OTHER)])
    fetch = TeamRepo.fetch
    raced: list[bool] = []

    def fetch_then_theo_pushes(repo: TeamRepo) -> None:
        fetch(repo)
        if repo is priya.repo and not raced:
            raced.append(True)
            assert theo.push_pending(now=T0).delivered

    priya.repo.fetch = lambda: fetch_then_theo_pushes(priya.repo)  # type: ignore[method-assign]
    result = priya.push_pending(now=T0)

    assert raced and result.delivered == [finished("01JDTURN01").path]
    assert sorted(on_state(team)) == sorted(
        [finished("01JDTURN01").path, finished("01JDTURN02", heinzel=OTHER).path]
    )
    assert run_git(team, "rev-list", "--count", "hz/state") == "2\n"


def test_two_writers_pushing_at_once_both_land(tmp_path: Path, team: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from hz_kernel.team.state_branch import MAX_RECEIPT, StateBranch\n"
        "from tests.support.team import HEINZEL, OTHER, T0, finished\n"
        "home, team, which = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
        "state = StateBranch(Path(home), team)\n"
        "for n in range(8):\n"
        "    state.queue([finished(f'01JDT{which}{n:02d}', heinzel=(HEINZEL, OTHER)[which])])\n"
        "    state.push_pending(now=T0)\n"
        "for _ in range(20):\n"
        "    if not state.pending():\n"
        "        break\n"
        "    state.push_pending(now=T0)\n"
        "print(len(state.pending()))\n"
    )
    root = Path(__file__).resolve().parents[3]
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / f"home{i}"), str(team), str(i)],
            cwd=root,
            stdout=subprocess.PIPE,
        )
        for i in (0, 1)
    ]
    outs = [w.communicate(timeout=240)[0] for w in writers]

    assert [w.returncode for w in writers] == [0, 0]
    assert outs == [b"0\n", b"0\n"]
    expected = {
        finished(f"01JDT{i}{n:02d}", heinzel=(HEINZEL, OTHER)[i]).path
        for i in (0, 1)
        for n in range(8)
    }
    assert set(on_state(team)) == expected


def test_a_receipt_with_a_stale_token_is_refused(tmp_path: Path, team: Path) -> None:
    repo_priya = TeamRepo(tmp_path / "priya", str(team))
    repo_theo = TeamRepo(tmp_path / "theo", str(team))
    assert acquire_or_renew(repo_priya, HEINZEL, handle="priya", now=T0, ttl=TTL).lease.token == 1
    late = T0 + 3 * TTL
    taken = acquire_or_renew(repo_theo, HEINZEL, handle="theo", now=late, ttl=TTL)
    assert taken.how == "took-over" and taken.lease.token == 2
    theo = StateBranch(tmp_path / "theo", str(team))
    theo.queue([finished("01JDTURN02", token=2)])
    assert theo.push_pending(now=late).delivered
    priya = branch(tmp_path, team)
    priya.queue([finished("01JDTURN01", token=1)])

    result = priya.push_pending(now=late)

    assert result.delivered == [] and result.queued == []
    assert [(r.code, r.path) for r in result.refused] == [("HZS104", finished("01JDTURN01").path)]
    assert "token 1 is older than the lease's 2" in result.refused[0].message
    assert sorted(on_state(team)) == [finished("01JDTURN02").path]
    assert priya.pending() == []


def test_a_receipt_an_older_hz_pushed_without_by_counts_as_delivered(
    tmp_path: Path, team: Path
) -> None:
    old = finished("01JDTURN01")
    assert old.by is None and b'"by"' not in old.to_bytes()
    assert parse_receipt(old.to_bytes()).to_bytes() == old.to_bytes()
    priya = branch(tmp_path, team)
    priya.queue([old])
    priya.push_pending(now=T0)
    tip = run_git(team, "rev-parse", "hz/state")
    priya.queue([old.model_copy(update={"by": "priya"})])

    again = priya.push_pending(now=T0 + TTL)

    assert again.delivered == [old.path] and again.refused == []
    assert run_git(team, "rev-parse", "hz/state") == tip


def test_a_different_receipt_at_a_delivered_path_is_refused(tmp_path: Path, team: Path) -> None:
    priya, theo = branch(tmp_path, team, "priya"), branch(tmp_path, team, "theo")
    priya.queue([finished("01JDTURN01")])
    priya.push_pending(now=T0)
    other = finished("01JDTURN01").model_copy(update={"usd": 9.0})
    theo.queue([other])

    result = theo.push_pending(now=T0)

    assert [(r.code, r.path) for r in result.refused] == [("HZS106", other.path)]
    assert on_state(team) == {other.path: finished("01JDTURN01").to_bytes()}
    assert theo.pending() == []


def test_a_takeover_between_fetch_and_push_fences_the_old_holder_out(
    tmp_path: Path, team: Path
) -> None:
    priya_repo = TeamRepo(tmp_path / "priya", str(team))
    theo_repo = TeamRepo(tmp_path / "theo", str(team))
    acquire_or_renew(priya_repo, HEINZEL, handle="priya", now=T0, ttl=TTL)
    late = T0 + 3 * TTL
    priya = branch(tmp_path, team)
    priya.queue([finished("01JDTURN01", token=1)])
    fetch = TeamRepo.fetch
    taken: list[int] = []

    def fetch_then_theo_takes_over(repo: TeamRepo) -> None:
        fetch(repo)
        if not taken:
            outcome = acquire_or_renew(theo_repo, HEINZEL, handle="theo", now=late, ttl=TTL)
            taken.append(outcome.lease.token)

    priya.repo.fetch = lambda: fetch_then_theo_takes_over(priya.repo)  # type: ignore[method-assign]
    result = priya.push_pending(now=late)

    assert taken == [2]
    assert [r.code for r in result.refused] == ["HZS104"]
    assert result.delivered == [] and result.queued == []
    assert "refs/heads/hz/state" not in refs(team)


def test_read_receipts_shows_the_team_s_receipts(tmp_path: Path, team: Path) -> None:
    priya, theo = branch(tmp_path, team, "priya"), branch(tmp_path, team, "theo")
    priya.queue([finished("01JDTURN01"), placed("01JDTURN01")])
    priya.push_pending(now=T0)
    theo.queue([finished("01JDTURN02", heinzel=OTHER)])
    theo.push_pending(now=T0)

    log = priya.read_receipts()

    assert [(r.heinzel, r.turn, r.kind) for r in log.receipts] == [
        (HEINZEL, "01JDTURN01", "turn.finished"),
        (OTHER, "01JDTURN02", "turn.finished"),
        (HEINZEL, "01JDTURN01", "draft.placed"),
    ]
    assert log.unreadable == []


def test_a_file_on_hz_state_that_is_no_receipt_is_listed_and_kept(
    tmp_path: Path, team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = branch(tmp_path, team)
    state.queue([finished("01JDTURN01")])
    state.push_pending(now=T0)
    padded = finished("01JDTURN03").to_bytes() + b" " * MAX_RECEIPT
    big, odd = f"receipts/{HEINZEL}/big.json", f"receipts/{HEINZEL}/odd.json"
    blobs = put_on_state(team, {odd: b"{}", big: padded})
    state.queue([finished("01JDTURN02")])
    read: list[str] = []
    contents = TeamRepo.contents

    def reading(repo: TeamRepo, asked: list[str]) -> list[bytes]:
        read.extend(asked)
        return contents(repo, asked)

    monkeypatch.setattr(TeamRepo, "contents", reading)

    assert state.push_pending(now=T0).delivered == [finished("01JDTURN02").path]
    log = state.read_receipts()
    offline = state.read_receipts(fetch=False)

    assert [r.turn for r in log.receipts] == ["01JDTURN01", "01JDTURN02"]
    assert log.unreadable == [big, odd]
    assert offline == log
    assert blobs[odd] in read and blobs[big] not in read
    assert f"receipts/{HEINZEL}/odd.json" in on_state(team)


@pytest.mark.parametrize("moved_to", ["main", "a person's commit", "another message"])
def test_hz_refuses_to_build_on_a_tip_it_did_not_write(
    tmp_path: Path, team: Path, moved_to: str
) -> None:
    state = branch(tmp_path, team)
    state.queue([finished("01JDTURN01")])
    state.push_pending(now=T0)
    tree = run_git(team, "rev-parse", "hz/state^{tree}").strip()
    foreign = {
        "main": lambda: run_git(team, "rev-parse", "main").strip(),
        "a person's commit": lambda: run_git(
            team, "commit-tree", tree, "-p", "hz/state", "-m", "hz: 1 receipt(s)"
        ).strip(),
        "another message": lambda: hz_commit(team, tree, "hz/state", "tidy up"),
    }[moved_to]()
    run_git(team, "update-ref", "refs/heads/hz/state", foreign)
    state.queue([finished("01JDTURN02")])

    result = state.push_pending(now=T0 + TTL)
    log = state.read_receipts()

    assert result.error is not None and result.error.startswith("HZS117: hz/state: its tip ")
    assert "\n" not in result.error
    assert result.queued == [finished("01JDTURN02").path] == state.pending()
    assert run_git(team, "rev-parse", "hz/state").strip() == foreign
    assert log.receipts == [] and log.problem is not None and log.problem.startswith("HZS117")
    assert state.tip_problem() == log.problem


@pytest.mark.parametrize("moved", ["back", "deleted"])
def test_receipts_gone_from_a_branch_moved_back_are_pushed_again(
    tmp_path: Path, team: Path, moved: str
) -> None:
    state, theo = branch(tmp_path, team), branch(tmp_path, team, "theo")
    state.queue([finished("01JDTURN01")])
    state.push_pending(now=T0)
    first = run_git(team, "rev-parse", "hz/state").strip()
    state.queue([finished("01JDTURN02"), placed("01JDTURN02")])
    state.push_pending(now=T0 + TTL)
    theo.queue([finished("01JDTURN09", heinzel=OTHER)])
    theo.push_pending(now=T0 + TTL)
    if moved == "back":
        run_git(team, "update-ref", "refs/heads/hz/state", first)
    else:
        run_git(team, "update-ref", "-d", "refs/heads/hz/state")
    state.queue([finished("01JDTURN03")])

    result = state.push_pending(now=T0 + 2 * TTL)

    gone = [finished("01JDTURN02"), placed("01JDTURN02")]
    if moved == "deleted":
        gone.append(finished("01JDTURN01"))
    assert result.delivered == [finished("01JDTURN03").path] and result.error is None
    assert result.restored == sorted(r.path for r in gone)
    assert set(on_state(team)) == {
        r.path for r in [finished("01JDTURN01"), *gone, finished("01JDTURN03")]
    }
    assert state.push_pending(now=T0 + 3 * TTL).restored == []


def test_a_hand_edited_outbox_file_with_text_is_refused_not_pushed(
    tmp_path: Path, team: Path
) -> None:
    state = branch(tmp_path, team)
    receipt = finished("01JDTURN01")
    state.queue([receipt])
    path = state.outbox / receipt.path
    document = json.loads(path.read_bytes())
    document["report"] = "Priya said the numbers look off"
    path.write_text(json.dumps(document))

    result = state.push_pending(now=T0)

    assert [r.code for r in result.refused] == ["HZS108"]
    assert "refs/heads/hz/state" not in refs(team)
    assert state.pending() == []


def test_queue_lints_every_receipt(tmp_path: Path, team: Path) -> None:
    state = branch(tmp_path, team)
    with pytest.raises(HzError) as refused:
        state.queue([finished("01JDTURN01"), placed("01JDTURN01", asset="doc:Priya Raman.md")])
    assert refused.value.code == "HZS103"
    assert state.pending() == []


def test_a_hung_remote_is_stopped_with_the_ssh_git_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "ssh.pid"
    ssh = tmp_path / "ssh"
    ssh.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 300\n")
    ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    monkeypatch.setattr(git_module, "TIMEOUT_SECONDS", 2.0)
    state = StateBranch(tmp_path / "priya", "ssh://team.invalid/team.git")
    state.queue([finished("01JDTURN01")])

    result = state.push_pending(now=T0)

    assert result.error == "HZS105: git fetch: no answer within 2s"
    assert result.queued == [finished("01JDTURN01").path]
    pid = int(pidfile.read_text())
    for _ in range(100):
        if not alive(pid):
            break
        time.sleep(0.05)
    assert not alive(pid), "git's ssh outlived it"


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_receipt_with_a_token_no_lease_gave_is_refused(tmp_path: Path, team: Path) -> None:
    repo = TeamRepo(tmp_path / "priya", str(team))
    assert acquire_or_renew(repo, HEINZEL, handle="priya", now=T0, ttl=TTL).lease.token == 1
    priya = branch(tmp_path, team)
    priya.queue([finished("01JDTURN01", token=1), finished("01JDTURN02", token=7)])

    result = priya.push_pending(now=T0)

    assert result.delivered == [finished("01JDTURN01").path]
    assert [(r.code, r.path) for r in result.refused] == [("HZS104", finished("01JDTURN02").path)]
    assert "token 7 was never given: the lease's is 1" in result.refused[0].message
    assert sorted(on_state(team)) == [finished("01JDTURN01").path]


def test_a_newer_hz_s_receipt_is_read_without_the_fields_this_hz_does_not_know(
    tmp_path: Path, team: Path
) -> None:
    state = branch(tmp_path, team)
    state.queue([finished("01JDTURN01")])
    state.push_pending(now=T0)
    newer = orjson.loads(finished("01JDTURN02").to_bytes()) | {"zone": "eu-1"}
    texty = orjson.loads(finished("01JDTURN03").to_bytes()) | {"summary_v2": "x"}
    put_on_state(
        team,
        {
            finished("01JDTURN02").path: orjson.dumps(newer),
            finished("01JDTURN03").path: orjson.dumps(texty),
        },
    )

    log = state.read_receipts()

    assert [r.turn for r in log.receipts] == ["01JDTURN01", "01JDTURN02"]
    assert log.receipts[1] == finished("01JDTURN02")
    assert [(r.code, r.path) for r in log.refused] == [("HZS101", finished("01JDTURN03").path)]
    assert log.unreadable == []
