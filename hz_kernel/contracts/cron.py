"""What a cron schedule means, as sets, so two schedules are compared exactly and never sampled.

A five-field cron fires at every minute whose minute, hour and day all
match, so its slots are a product: minutes × hours × days. One schedule
fires only where another does exactly when each factor is a subset of the
other's. Minutes and hours are small sets. Days are decided per *kind of
day*: whether a date matches depends only on its month, the length of that
month (February has two), its day of the month and its weekday — ``L``,
``LW``, ``5L`` and ``1#2`` included — and every such combination recurs in
the Gregorian calendar (a 28-year stretch holds them all). So the day set
is the finite set of kinds that match, computed once per expression, and
set inclusion over it is a proof, not a probe.

The fields are parsed by cronsim, the same parser that fires the slots, and
its rule for day-of-month and day-of-week is kept: when either field starts
with ``*`` both must match, otherwise either may.

Time zones: a contract's cron is read in the home's zone. Within one zone,
equal local matches give equal instants when both schedules resolve
daylight-saving nights the same way. cronsim has two ways: a schedule whose
minute and hour fields start with a digit ("fixed time") fires once in a
repeated hour and at the end of a skipped one; one with a ``*`` there fires
in both copies of a repeated hour and not at all in a skipped one. Across
the two ways neither is a subset of the other on those nights, so outside
UTC such a change never counts as narrowing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from typing import Literal

from cronsim import CronSim

MONTH_LENGTHS: dict[int, tuple[int, ...]] = {
    1: (31,),
    2: (28, 29),
    3: (31,),
    4: (30,),
    5: (31,),
    6: (30,),
    7: (31,),
    8: (31,),
    9: (30,),
    10: (31,),
    11: (30,),
    12: (31,),
}
"""Every length each month can have (February: common and leap years)."""

MONTH_NAMES = ("", "January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December")  # fmt: skip
WEEKDAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")

DayKind = tuple[int, int, int, int]
"""(month, length of that month, day of the month, weekday with 0 = Sunday)."""

_PARSE_AT = datetime(2024, 1, 1)


@dataclass(frozen=True, slots=True)
class CronShape:
    """The slots of a cron expression as sets: minutes × hours × kinds of day."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[DayKind]
    fixed_time: bool
    """True when the minute and hour fields start with a digit (see the module's note on DST)."""
    days_digest: str
    """SHA-256 of the sorted day kinds: the days, compactly, for the fingerprint."""

    def canonical(self) -> dict[str, object]:
        """A spelling-free form for the intent fingerprint: equal exactly when the slots are."""
        return {
            "minutes": sorted(self.minutes),
            "hours": sorted(self.hours),
            "days": self.days_digest,
            "fixed_time": self.fixed_time,
        }


@lru_cache(maxsize=256)
def cron_shape(expression: str) -> CronShape:
    """The shape of a valid cron expression (``CronSimError`` if it is not one)."""
    parsed = CronSim(expression, _PARSE_AT)
    fields = expression.upper().split()
    matching = {
        length: frozenset(
            (day, weekday)
            for day in range(1, length + 1)
            for weekday in range(7)
            if _day_matches(parsed, day, weekday, length)
        )
        for length in (28, 29, 30, 31)
    }
    days = frozenset(
        (month, length, day, weekday)
        for month in sorted(parsed.months)
        for length in MONTH_LENGTHS[month]
        for day, weekday in matching[length]
    )
    return CronShape(
        minutes=frozenset(parsed.minutes),
        hours=frozenset(parsed.hours),
        days=days,
        fixed_time=not (fields[0].startswith("*") or fields[1].startswith("*")),
        days_digest=hashlib.sha256(repr(sorted(days)).encode()).hexdigest(),
    )


def _day_matches(parsed: CronSim, day: int, weekday: int, length: int) -> bool:
    by_date = _date_matches(parsed.days, day, weekday, length)
    by_weekday = _weekday_matches(parsed.weekdays, day, weekday, length)
    return (by_date and by_weekday) if parsed.day_and else (by_date or by_weekday)


def _date_matches(days: set[int], day: int, weekday: int, length: int) -> bool:
    if day in days:
        return True
    if CronSim.LAST in days and day == length:
        return True
    if CronSim.LAST_WEEKDAY in days:
        last = (weekday + length - day) % 7
        last_weekday = length - 2 if last == 0 else length - 1 if last == 6 else length
        return day == last_weekday
    return False


def _weekday_matches(
    weekdays: set[int | tuple[int, int]], day: int, weekday: int, length: int
) -> bool:
    for item in weekdays:
        if isinstance(item, int):
            if item % 7 == weekday:
                return True
            continue
        which, nth = item
        if which % 7 != weekday:
            continue
        if nth == CronSim.LAST and day + 7 > length:
            return True
        if nth != CronSim.LAST and (day + 6) // 7 == nth:
            return True
    return False


Verdict = Literal["same", "narrows", "widens"]


@dataclass(frozen=True, slots=True)
class ScheduleChange:
    """How a new schedule relates to an old one; ``why`` says what a widening adds."""

    verdict: Verdict
    why: str = ""


def compare_schedules(old: str, new: str, *, zone: tzinfo | None = None) -> ScheduleChange:
    """``narrows`` only if every slot of ``new`` is a slot of ``old``, ``same`` if they are equal.

    ``zone`` is the zone both are read in; None means unknown, which is
    treated like a zone with daylight saving.
    """
    before, after = cron_shape(old), cron_shape(new)
    extra_minutes = sorted(after.minutes - before.minutes)
    if extra_minutes:
        return ScheduleChange("widens", f"{_few('minute', extra_minutes)} of the hour")
    extra_hours = sorted(after.hours - before.hours)
    if extra_hours:
        return ScheduleChange("widens", f"{_few('hour', extra_hours)} of the day")
    extra_days = after.days - before.days
    if extra_days:
        month, length, day, weekday = min(extra_days)
        leap = " in a leap year" if month == 2 and length == 29 else ""
        example = f"{MONTH_NAMES[month]} {day}{leap} when it is a {WEEKDAY_NAMES[weekday]}"
        return ScheduleChange("widens", f"it fires on days the old one did not, like {example}")
    if before.fixed_time != after.fixed_time and not _is_utc(zone):
        return ScheduleChange(
            "widens", "it fires differently on daylight-saving nights (a fixed time vs. a '*')"
        )
    if (after.minutes, after.hours, after.days) == (before.minutes, before.hours, before.days):
        return ScheduleChange("same")
    return ScheduleChange("narrows")


def _is_utc(zone: tzinfo | None) -> bool:
    return zone is UTC or (zone is not None and str(zone) in ("UTC", "Etc/UTC"))


def _few(unit: str, values: list[int]) -> str:
    """``it adds minute 5`` / ``it adds hours 0, 1, 2, 3, ...``."""
    shown = ", ".join(str(v) for v in values[:4]) + (", ..." if len(values) > 4 else "")
    return f"it adds {unit}{'s' if len(values) > 1 else ''} {shown}"
