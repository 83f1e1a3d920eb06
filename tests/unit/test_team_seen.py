"""The team block of a listing row, from the tick's record of what its lease step saw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hz_kernel.config import TeamSettings
from hz_kernel.team.seen import Seen, SeenLease, placement, read_seen, view, write_seen

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
HOME = TeamSettings(handle="priya", repo="/srv/git/team.git")


def seen(expires: datetime, renewed: datetime, *, ours: bool = False) -> Seen:
    lease = SeenLease(holder="theo", expires=expires, token=3, renewed=renewed, ours=ours)
    return Seen(repo="/srv/git/team.git", at=T0, lease=lease)


def test_a_lease_handed_back_reads_released_and_one_that_ran_out_expired() -> None:
    place = placement({"delegates": ["priya"]}, HOME, "weekly-report")
    released = view(place, seen(T0, T0), T0 + timedelta(minutes=1))
    ran_out = view(place, seen(T0, T0 - timedelta(minutes=20)), T0 + timedelta(minutes=1))
    valid = view(place, seen(T0 + timedelta(minutes=20), T0), T0)

    assert (released.role, released.free, released.who) == ("delegate", "released", "free")
    assert (ran_out.free, ran_out.holder, ran_out.token) == ("expired", "theo", 3)
    assert (valid.free, valid.who, valid.expires) == (None, "theo", "2026-11-27T09:20:00Z")


def test_our_lease_is_held_here_only_until_it_runs_out() -> None:
    place = placement({}, HOME, "weekly-report")
    record = seen(T0 + timedelta(minutes=20), T0, ours=True)

    assert view(place, record, T0).who == "here"
    assert view(place, record, T0 + timedelta(hours=1)).held_here is False


def test_a_record_of_another_repository_is_not_shown_and_no_repository_is_an_error() -> None:
    moved = placement({"repo": "/srv/git/other.git"}, HOME, "weekly-report")
    shown = view(moved, seen(T0 + timedelta(minutes=20), T0), T0)
    assert shown.holder is None and shown.repo == "/srv/git/other.git"

    lost = view(placement({}, TeamSettings(handle="priya"), "weekly-report"), None, T0)
    assert lost.error_code == "HZS114" and lost.error is not None
    assert lost.error.startswith("HZS114: weekly-report: ")


def test_a_record_hz_did_not_write_is_no_record(tmp_path: Path) -> None:
    path = tmp_path / "team" / "seen.json"
    write_seen(path, {"hz-01JD0000000000000000000000": seen(T0, T0)})
    assert list(read_seen(path)) == ["hz-01JD0000000000000000000000"]

    path.write_text('{"hz-01JD0000000000000000000000": {"repo": 3}}')
    assert read_seen(path) == {}


def test_a_home_without_a_handle_has_no_role() -> None:
    """Not "owner" (found by the new-user pass): whose role it plays is unknown."""
    place = placement({"delegates": ["priya"]}, TeamSettings(repo="/srv/git/team.git"), "w")
    unknown = view(place, None, T0)
    assert (place.role, place.delegate, unknown.role) == (None, False, None)
    assert unknown.model_dump(mode="json")["role"] is None
