"""Schedule slots: UTC keys, the newest slot at or before now, and daylight-saving nights."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from hz_kernel.errors import HzError
from hz_kernel.tick.schedule import (
    SlotClock,
    latest_slot,
    next_slot,
    slot_key,
    slot_time,
    user_zone,
)

BERLIN = ZoneInfo("Europe/Berlin")


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _forward(expr: str, start: datetime, end: datetime) -> list[str]:
    """Every slot key between two instants, walking forward one firing at a time."""
    keys: list[str] = []
    moment = start
    while (slot := next_slot(expr, moment, BERLIN)) is not None and slot <= end:
        keys.append(slot_key(slot))
        moment = slot
    return keys


def test_a_slot_key_is_the_utc_minute() -> None:
    moment = datetime(2026, 3, 6, 15, 0, 42, tzinfo=BERLIN)
    assert slot_key(moment) == "2026-03-06T14:00"
    assert slot_time("2026-03-06T14:00") == _at("2026-03-06T14:00")


def test_the_latest_slot_includes_the_current_minute_and_never_the_future() -> None:
    assert latest_slot("0 9 * * *", _at("2026-05-04T09:00:00")) == _at("2026-05-04T09:00")
    assert latest_slot("0 9 * * *", _at("2026-05-04T09:00:59")) == _at("2026-05-04T09:00")
    assert latest_slot("0 9 * * *", _at("2026-05-04T08:59:59")) == _at("2026-05-03T09:00")


def test_a_local_schedule_follows_the_users_clock_through_summer_time() -> None:
    winter = latest_slot("0 15 * * FRI", _at("2026-03-20T23:00"), BERLIN)
    summer = latest_slot("0 15 * * FRI", _at("2026-04-03T23:00"), BERLIN)
    assert slot_key(winter) == "2026-03-20T14:00"  # type: ignore[arg-type]
    assert slot_key(summer) == "2026-04-03T13:00"  # type: ignore[arg-type]


def test_march_in_berlin_the_missing_hour_fires_once_just_after() -> None:
    keys = _forward("30 2 * * *", _at("2026-03-27T12:00"), _at("2026-03-31T12:00"))
    assert keys == [
        "2026-03-28T01:30",
        "2026-03-29T01:00",  # 02:30 does not exist; it fires at 03:00 CEST
        "2026-03-30T00:30",
        "2026-03-31T00:30",
    ]


def test_october_in_berlin_a_daily_slot_fires_once_in_the_repeated_hour() -> None:
    keys = _forward("30 2 * * *", _at("2026-10-23T12:00"), _at("2026-10-27T12:00"))
    assert keys == [
        "2026-10-24T00:30",
        "2026-10-25T00:30",  # the first 02:30 (CEST) only
        "2026-10-26T01:30",
        "2026-10-27T01:30",
    ]
    # In the repeated hour itself, the newest slot is still that first 02:30.
    for minute in (0, 10, 29, 45):
        moment = _at("2026-10-25T01:00") + timedelta(minutes=minute)
        assert slot_key(latest_slot("30 2 * * *", moment, BERLIN)) == "2026-10-25T00:30"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "start", "end"),
    [
        ("*/30 * * * *", "2026-10-24T22:00", "2026-10-25T04:00"),
        ("0 * * * *", "2026-10-24T22:00", "2026-10-25T04:00"),
        ("*/30 * * * *", "2026-03-28T22:00", "2026-03-29T04:00"),
        ("30 2 * * *", "2026-03-28T00:00", "2026-03-31T00:00"),
        ("30 2 * * *", "2026-10-24T00:00", "2026-10-27T00:00"),
    ],
)
def test_every_tick_names_each_firing_with_the_same_key(expr: str, start: str, end: str) -> None:
    """Whichever minute a tick runs in, the newest slot it sees is one of the firings, once."""
    firings = _forward(expr, _at(start), _at(end))
    assert len(firings) == len(set(firings))
    seen: list[str] = []
    moment = _at(start) + timedelta(minutes=1)
    while moment <= _at(end):
        slot = latest_slot(expr, moment, BERLIN)
        assert slot is not None
        key = slot_key(slot)
        if slot > _at(start) and (not seen or seen[-1] != key):
            seen.append(key)
        moment += timedelta(minutes=7)
    assert set(seen) <= set(firings)
    assert seen == sorted(seen)


def test_the_slot_clock_agrees_with_a_fresh_evaluation() -> None:
    clock = SlotClock(BERLIN)
    moment = _at("2026-10-24T20:00")
    for _ in range(200):
        assert clock.latest("*/30 * * * *", moment) == latest_slot("*/30 * * * *", moment, BERLIN)
        moment += timedelta(minutes=4)
    earlier = _at("2026-10-20T20:00")
    assert clock.latest("*/30 * * * *", earlier) == _at("2026-10-20T20:00")


def test_an_unknown_zone_is_a_clear_error() -> None:
    assert user_zone(None) is UTC
    assert user_zone("Europe/Berlin") == BERLIN
    with pytest.raises(HzError) as caught:
        user_zone("Mars/Olympus")
    assert caught.value.code == "HZT101"
