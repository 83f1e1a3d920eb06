"""Leases with real git: renew, take over only after expiry, and exactly one winner of a race."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from hz_kernel.errors import HzError
from hz_kernel.team.lease import (
    acquire_or_renew,
    claim,
    lease_ref,
    mirrored_claim,
    read_lease,
    release,
)
from hz_kernel.team.repo import TeamRepo
from tests.support.team import HEINZEL, T0, make_team_repo, refs, run_git

TTL = timedelta(minutes=2)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def team(tmp_path: Path) -> Path:
    return make_team_repo(tmp_path)


def test_renewal_keeps_the_token_and_takeover_waits_for_expiry(tmp_path: Path, team: Path) -> None:
    priya = TeamRepo(tmp_path / "priya", str(team))
    theo = TeamRepo(tmp_path / "theo", str(team))
    main = refs(team)["refs/heads/main"]

    first = acquire_or_renew(priya, HEINZEL, handle="priya", now=T0, ttl=TTL)
    renewed = acquire_or_renew(priya, HEINZEL, handle="priya", now=T0 + TTL / 2, ttl=TTL)
    refused = acquire_or_renew(theo, HEINZEL, handle="theo", now=T0 + TTL, ttl=TTL)
    taken = acquire_or_renew(theo, HEINZEL, handle="theo", now=T0 + TTL / 2 + TTL, ttl=TTL)
    late = acquire_or_renew(priya, HEINZEL, handle="priya", now=T0 + TTL / 2 + TTL, ttl=TTL)

    assert (first.how, first.lease.holder, first.lease.token) == ("acquired", "priya", 1)
    assert (renewed.how, renewed.lease.token) == ("renewed", 1)
    assert renewed.lease.expires == T0 + TTL / 2 + TTL
    assert (refused.how, refused.held, refused.lease) == ("held-by", False, renewed.lease)
    assert (taken.how, taken.lease.holder, taken.lease.token) == ("took-over", "theo", 2)
    assert (late.how, late.lease.holder, late.lease.token) == ("held-by", "theo", 2)
    assert read_lease(priya, HEINZEL) == taken.lease
    assert refs(team)["refs/heads/main"] == main
    stored = orjson.loads(run_git(team, "cat-file", "blob", f"{lease_ref(HEINZEL)}:lease.json"))
    assert stored == {
        "expires": "2026-11-27T09:05:00Z",
        "holder": "theo",
        "home": None,
        "owner": "priya",
        "renewed": "2026-11-27T09:03:00Z",
        "token": 2,
    }


def test_a_holder_whose_lease_lapsed_unclaimed_renews_it_with_its_token(
    tmp_path: Path, team: Path
) -> None:
    priya = TeamRepo(tmp_path / "priya", str(team))
    acquire_or_renew(priya, HEINZEL, handle="priya", now=T0, ttl=TTL)

    back = acquire_or_renew(priya, HEINZEL, handle="priya", now=T0 + 10 * TTL, ttl=TTL)

    assert (back.how, back.lease.token) == ("renewed", 1)


def test_a_claim_lets_the_holder_release_and_the_owner_take_over(
    tmp_path: Path, team: Path
) -> None:
    priya = TeamRepo(tmp_path / "priya", str(team))
    theo = TeamRepo(tmp_path / "theo", str(team))
    acquire_or_renew(theo, HEINZEL, handle="theo", now=T0, ttl=TTL)
    claim(priya, HEINZEL, handle="priya", now=T0 + TTL / 4)
    claim(priya, HEINZEL, handle="priya", now=T0 + TTL / 2)

    read_lease(theo, HEINZEL)
    wanted = mirrored_claim(theo, HEINZEL)
    not_hers = release(priya, HEINZEL, handle="priya", now=T0 + TTL / 2)
    released = release(theo, HEINZEL, handle="theo", now=T0 + TTL / 2)
    taken = acquire_or_renew(priya, HEINZEL, handle="priya", now=T0 + TTL / 2, ttl=TTL)

    assert wanted is not None and wanted.owner == "priya" and wanted.at == T0 + TTL / 2
    assert wanted.fresh(T0 + TTL, TTL) and not wanted.fresh(T0 + TTL / 2 + TTL, TTL)
    assert not_hers is not None and (not_hers.holder, not_hers.expires) == ("theo", T0 + TTL)
    assert released is not None and released.expired(T0 + TTL / 2) and released.token == 1
    assert (taken.how, taken.lease.holder, taken.lease.token) == ("took-over", "priya", 2)


def put_lease(team: Path, content: bytes) -> None:
    """Point the lease ref at a commit whose ``lease.json`` is ``content``, as another hz would."""
    blob = run_git(team, "hash-object", "-w", "--stdin", stdin=content).strip()
    tree = run_git(team, "mktree", stdin=f"100644 blob {blob}\tlease.json\n".encode()).strip()
    commit = run_git(team, "commit-tree", tree, "-m", "hz: lease token 4").strip()
    run_git(team, "update-ref", lease_ref(HEINZEL), commit)


def test_a_lease_ref_that_holds_no_lease_is_a_coded_error(tmp_path: Path, team: Path) -> None:
    put_lease(team, b"not json")

    with pytest.raises(HzError) as junk:
        acquire_or_renew(TeamRepo(tmp_path / "p", str(team)), HEINZEL, handle="p", now=T0, ttl=TTL)

    assert junk.value.code == "HZS109"
    assert (
        junk.value.one_line()
        == f"HZS109: {lease_ref(HEINZEL)}: the lease ref does not hold a lease"
    )


def test_a_lease_a_newer_hz_wrote_is_read_without_the_fields_this_hz_does_not_know(
    tmp_path: Path, team: Path
) -> None:
    expires = (T0 + TTL).isoformat().replace("+00:00", "Z")
    newer = {"holder": "theo", "expires": expires, "token": 4, "owner": "priya", "zone": "eu-1"}
    put_lease(team, orjson.dumps(newer))

    lease = read_lease(TeamRepo(tmp_path / "p", str(team)), HEINZEL)

    assert lease is not None and (lease.holder, lease.token, lease.owner) == ("theo", 4, "priya")


def test_an_unreachable_remote_is_a_one_line_error(tmp_path: Path) -> None:
    repo = TeamRepo(tmp_path / "p", str(tmp_path / "gone.git"))

    with pytest.raises(HzError) as offline:
        acquire_or_renew(repo, HEINZEL, handle="priya", now=T0, ttl=TTL)

    assert offline.value.code == "HZS105"
    assert offline.value.one_line().startswith("HZS105: git fetch: fatal:")


def test_a_handle_that_is_a_name_is_refused(tmp_path: Path, team: Path) -> None:
    repo = TeamRepo(tmp_path / "p", str(team))

    with pytest.raises(HzError) as refused:
        acquire_or_renew(repo, HEINZEL, handle="Priya Raman", now=T0, ttl=TTL)

    assert refused.value.code == "HZS112"
    assert lease_ref(HEINZEL) not in refs(team)


def test_two_homes_racing_for_an_expired_lease_leave_exactly_one_holder(
    tmp_path: Path, team: Path
) -> None:
    owner = TeamRepo(tmp_path / "owner", str(team))
    acquire_or_renew(owner, HEINZEL, handle="owner", now=T0, ttl=TTL)
    racers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.team_racer", str(tmp_path / h), str(team), h],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for h in ("priya", "theo")
    ]
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
        tokens = [1]
        for round_ in range(1, 31):
            instant = (T0 + round_ * 2 * TTL).isoformat()
            for racer in racers:
                assert racer.stdin is not None
                racer.stdin.write(f"{instant} {round_}\n")
                racer.stdin.flush()
            answers = [orjson.loads(r.stdout.readline()) for r in racers if r.stdout]

            winners = [a for a in answers if a.get("how") == "took-over"]
            assert len(winners) == 1, (round_, answers)
            assert [a.get("how") for a in answers].count("held-by") == 1, (round_, answers)
            assert all(a["holder"] == winners[0]["holder"] for a in answers)
            lease = read_lease(owner, HEINZEL)
            assert lease is not None and lease.holder == winners[0]["holder"]
            assert lease.token == winners[0]["token"]
            tokens.append(lease.token)
    finally:
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.close()
            racer.wait(timeout=60)
    assert tokens == list(range(1, 32))


@pytest.mark.parametrize("token", [2**64 - 1, 2**53])
def test_a_lease_with_a_token_beyond_json_s_exact_integers_holds_no_lease(
    tmp_path: Path, team: Path, token: int
) -> None:
    expires = T0.isoformat().replace("+00:00", "Z")
    put_lease(team, orjson.dumps({"holder": "theo", "expires": expires, "token": token}))

    with pytest.raises(HzError) as forged:
        acquire_or_renew(TeamRepo(tmp_path / "p", str(team)), HEINZEL, handle="p", now=T0, ttl=TTL)

    assert forged.value.code == "HZS109"


def test_a_lease_at_the_largest_token_is_not_taken_over_into_an_invalid_one(
    tmp_path: Path, team: Path
) -> None:
    expires = T0.isoformat().replace("+00:00", "Z")
    put_lease(team, orjson.dumps({"holder": "theo", "expires": expires, "token": 2**53 - 1}))

    with pytest.raises(HzError) as full:
        acquire_or_renew(TeamRepo(tmp_path / "p", str(team)), HEINZEL, handle="p", now=T0, ttl=TTL)

    assert full.value.code == "HZS109" and "cannot grow" in full.value.message


def test_a_hook_that_refuses_the_push_is_named_not_taken_for_a_race(
    tmp_path: Path, team: Path
) -> None:
    hook = team / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refs/hz/* are not allowed here' >&2\nexit 1\n")
    hook.chmod(0o755)

    with pytest.raises(HzError) as refused:
        acquire_or_renew(TeamRepo(tmp_path / "p", str(team)), HEINZEL, handle="p", now=T0, ttl=TTL)

    assert refused.value.code == "HZS105"
    assert refused.value.message == (
        "the team repository's hook refused the push: refs/hz/* are not allowed here"
    )
