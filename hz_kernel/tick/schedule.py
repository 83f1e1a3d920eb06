"""Schedule slots: when a contract's cron fires, named in UTC so a slot has one key forever.

A contract's cron is read in the user's own time zone (a "9:00" schedule
means nine o'clock where the user lives, summer or winter), but a slot's
key is the UTC minute it fired at, ``YYYY-MM-DDTHH:MM``. That makes keys
unambiguous across daylight-saving changes: the repeated hour of an
October night gives two distinct instants, the missing hour of a March
night gives none, and the same firing always gets the same key whichever
tick notices it.

A tick only asks "what is the newest slot at or before now?" — slots
missed while the machine slept coalesce into that newest one, since a
schedule is a recheck, not a backlog to replay.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from hz_kernel.errors import HzError

SLOT_FORMAT = "%Y-%m-%dT%H:%M"
_MINUTE = timedelta(minutes=1)


def user_zone(name: str | None) -> tzinfo:
    """The zone a contract's cron is read in: an IANA name, UTC when unset."""
    if not name or name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise HzError("HZT101", f"unknown time zone {name!r} (use an IANA name)", name) from None


def slot_key(moment: datetime) -> str:
    """The key of the slot that fired at ``moment``: its UTC minute."""
    return _utc(moment).strftime(SLOT_FORMAT)


def slot_time(key: str) -> datetime:
    """The UTC instant a slot key names."""
    return datetime.strptime(key, SLOT_FORMAT).replace(tzinfo=UTC)


def latest_slot(expr: str, now: datetime, zone: tzinfo = UTC) -> datetime | None:
    """The newest firing of ``expr`` at or before ``now`` (UTC), or None if it never fired."""
    return slots_around(expr, now, zone)[0]


def slots_around(
    expr: str, now: datetime, zone: tzinfo = UTC
) -> tuple[datetime | None, datetime | None]:
    """The newest firing at or before ``now`` and the first one after it.

    cronsim walking backwards can miss a firing in the repeated hour of a
    daylight-saving night, so its answer is only a starting point: walking
    forwards from it (which is exact) settles the newest firing.
    """
    floor = _utc(now).replace(second=0, microsecond=0)
    newest = _first(CronSim(expr, (floor + _MINUTE).astimezone(zone), reverse=True), expr)
    while True:
        upcoming = next_slot(expr, newest if newest is not None else floor, zone)
        if upcoming is None or upcoming > floor:
            return newest, upcoming
        newest = upcoming


def next_slot(expr: str, after: datetime, zone: tzinfo = UTC) -> datetime | None:
    """The first firing of ``expr`` strictly after ``after`` (UTC), or None if none comes."""
    start = _utc(after).replace(second=0, microsecond=0)
    return _first(CronSim(expr, start.astimezone(zone)), expr)


def _first(slots: CronSim, expr: str) -> datetime | None:
    try:
        return _utc(next(slots))
    except StopIteration:
        return None
    except CronSimError as exc:
        raise HzError("HZT102", f"the schedule cannot be evaluated ({exc})", expr) from None


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is UTC:  # the tick's own clock, asked once per heinzel
        return moment
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


class SlotClock:
    """Newest slots per schedule, remembered until the schedule's next firing.

    Hundreds of heinzels share a handful of schedules, so a tick evaluates
    each distinct cron once; a long-lived kernel (the daemon's loop) keeps
    the answer until it can change.
    """

    def __init__(self, zone: tzinfo = UTC) -> None:
        self.zone = zone
        self._known: dict[str, tuple[datetime | None, datetime | None, str | None]] = {}

    def latest(self, expr: str, now: datetime) -> datetime | None:
        """``latest_slot(expr, now)``, cached while ``now`` stays before the next firing."""
        return self._lookup(expr, now)[0]

    def upcoming(self, expr: str, now: datetime) -> datetime | None:
        """The first firing after ``now``, cached like ``latest``."""
        return self._lookup(expr, now)[1]

    def latest_key(self, expr: str, now: datetime) -> str | None:
        """The key of ``latest(expr, now)``."""
        return self._lookup(expr, now)[2]

    def _lookup(
        self, expr: str, now: datetime
    ) -> tuple[datetime | None, datetime | None, str | None]:
        now = _utc(now)
        known = self._known.get(expr)
        if known is not None:
            newest, upcoming, _ = known
            if (newest is None or newest <= now) and (upcoming is None or now < upcoming):
                return known
        newest, upcoming = slots_around(expr, now, self.zone)
        known = (newest, upcoming, slot_key(newest) if newest else None)
        self._known[expr] = known
        return known
