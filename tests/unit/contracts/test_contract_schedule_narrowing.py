"""Property (issue 12 item 13): a schedule "narrows" exactly when every new slot is an old one.

The rule in ``hz_kernel.contracts.cron`` is decided over the cron fields.
These tests hold it against brute force: every day of 28 years (2024 to
2051, which hold every arrangement of weekdays, month lengths and leap
years that the Gregorian calendar has) matched by cronsim's own day test,
and the actual slots cronsim fires, in UTC and around Berlin's
daylight-saving nights.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from cronsim import CronSim
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hz_kernel.contracts import compare_schedules, cron_shape
from hz_kernel.tick.schedule import next_slot

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
START = date(2024, 1, 1)
DAYS = [START + timedelta(days=n) for n in range((date(2052, 1, 1) - START).days)]
BERLIN = ZoneInfo("Europe/Berlin")
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def _number(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[str]:
    plain = st.integers(low, high).map(str)
    if names is None:
        return plain
    named = st.integers(0, len(names) - 1).map(lambda i: names[i])
    return st.one_of(plain, named)


@st.composite
def _term(
    draw: st.DrawFn, low: int, high: int, names: list[str] | None, specials: list[str]
) -> str:
    kind = draw(st.sampled_from(["star", "step", "one", "range", "range-step", "special"]))
    if kind == "star":
        return "*"
    if kind == "step":
        return f"*/{draw(st.integers(1, high - low + 1))}"
    if kind == "one" or (kind == "special" and not specials):
        return draw(_number(low, high, names))
    if kind == "special":
        return draw(st.sampled_from(specials))
    a, b = sorted(draw(st.lists(st.integers(low, high), min_size=2, max_size=2)))
    spelled = f"{a}-{b}"
    if names is not None and draw(st.booleans()):
        spelled = f"{names[a - low]}-{names[b - low]}"
    if kind == "range-step":
        spelled += f"/{draw(st.integers(1, b - a + 1))}"
    return spelled


def _field(
    low: int, high: int, names: list[str] | None = None, specials: list[str] | None = None
) -> st.SearchStrategy[str]:
    term = _term(low, high, names, specials or [])
    return st.one_of(term, st.lists(term, min_size=2, max_size=4).map(",".join))


_DOW_SPECIALS = [f"{d}L" for d in range(8)] + [f"{d}#{n}" for d in range(8) for n in range(1, 6)]
FIELDS = (
    _field(0, 59),
    _field(0, 23),
    _field(1, 31, specials=["L", "LW"]),
    _field(1, 12, MONTHS),
    _field(0, 7, [*WEEKDAYS, "SUN"], specials=_DOW_SPECIALS),
)


def _valid(expression: str) -> bool:
    try:
        next(CronSim(expression, datetime(2024, 1, 1)))
    except Exception:  # cronsim raises several types on malformed fields; StopIteration: never
        return False
    return True


@st.composite
def crons(draw: st.DrawFn) -> str:
    expression = " ".join(draw(field) for field in FIELDS)
    assume(_valid(expression))
    return expression


@st.composite
def subset_of(draw: st.DrawFn, expression: str) -> str:
    """A spelling of a schedule that often narrows ``expression``: a field cut to some values."""
    fields = expression.split()
    parsed = CronSim(expression, datetime(2024, 1, 1))
    sets = [parsed.minutes, parsed.hours, parsed.days, parsed.months]
    for index in draw(st.sets(st.integers(0, 4), min_size=1, max_size=3)):
        field = sets[index] if index < 4 else parsed.weekdays
        values = sorted(v for v in field if isinstance(v, int) and v >= 0)
        if not values:
            continue
        chosen = draw(st.lists(st.sampled_from(values), min_size=1, max_size=4, unique=True))
        fields[index] = ",".join(str(v) for v in sorted(chosen))
    narrowed = " ".join(fields)
    assume(_valid(narrowed))
    return narrowed


@st.composite
def pairs(draw: st.DrawFn) -> tuple[str, str]:
    old = draw(crons())
    new = draw(st.one_of(crons(), subset_of(old)))
    return old, new


def _days(expression: str) -> set[date]:
    parsed = CronSim(expression, datetime(2024, 1, 1))
    return {d for d in DAYS if d.month in parsed.months and parsed.match_day(d)}


def _brute_force_included(old: str, new: str) -> bool:
    """Every day, hour and minute ``new`` fires on in 28 years, ``old`` fires on too."""
    a, b = CronSim(old, datetime(2024, 1, 1)), CronSim(new, datetime(2024, 1, 1))
    return b.minutes <= a.minutes and b.hours <= a.hours and _days(new) <= _days(old)


def _fires_at(expression: str, instant: datetime, zone: ZoneInfo | None) -> bool:
    """Whether the kernel's own slot walk fires ``expression`` at ``instant``."""
    before = instant - timedelta(minutes=1)
    found = next_slot(expression, before, zone or UTC)
    return found is not None and found.astimezone(UTC) == instant.astimezone(UTC)


def _slots(expression: str, start: datetime, zone: ZoneInfo | None, count: int) -> list[datetime]:
    found, moment = [], start
    for _ in range(count):
        upcoming = next_slot(expression, moment, zone or UTC)
        if upcoming is None:
            break
        found.append(upcoming)
        moment = upcoming
    return found


@PROPERTY
@given(pairs())
def test_narrowing_is_exactly_slot_inclusion_in_utc(pair: tuple[str, str]) -> None:
    old, new = pair
    verdict = compare_schedules(old, new, zone=UTC).verdict
    assert (verdict in ("narrows", "same")) == _brute_force_included(old, new), verdict
    if verdict == "same":
        assert _brute_force_included(new, old)
    if verdict == "narrows":
        for start in ("2024-02-27T00:00", "2028-02-27T00:00", "2031-12-30T00:00"):
            at = datetime.fromisoformat(start).replace(tzinfo=UTC)
            for slot in _slots(new, at, None, 150):
                assert _fires_at(old, slot, None), (old, new, slot)


@PROPERTY
@given(pairs())
def test_claimed_narrowing_is_never_wrong_on_daylight_saving_nights(pair: tuple[str, str]) -> None:
    old, new = pair
    if compare_schedules(old, new, zone=BERLIN).verdict != "narrows":
        return
    for start in ("2026-03-28T20:00", "2026-10-24T20:00"):
        at = datetime.fromisoformat(start).replace(tzinfo=UTC)
        for slot in _slots(new, at, BERLIN, 150):
            if slot > at + timedelta(days=3):
                break
            assert _fires_at(old, slot, BERLIN), (old, new, slot)


def test_the_issue_12_amendment_is_not_narrowing() -> None:
    """``0 15 * * FRI`` to ``0 * * FEB-DEC *`` fires hourly: it widens, whatever a window shows."""
    change = compare_schedules("0 15 * * FRI", "0 * * FEB-DEC *", zone=UTC)
    assert change.verdict == "widens"
    assert not _brute_force_included("0 15 * * FRI", "0 * * FEB-DEC *")


def test_a_fixed_time_in_a_skipped_hour_fires_where_a_star_schedule_does_not() -> None:
    """Why a change between a fixed time and a '*' never narrows outside UTC (issue 12 item 13).

    ``30 2 * * *`` matches a subset of ``* 2 * * *`` by the fields, but on the
    night Berlin skips 02:00-03:00 it fires at 03:00, where the other never does.
    """
    night = datetime(2026, 3, 29, 0, 0, tzinfo=UTC)
    (fixed,) = _slots("30 2 * * *", night - timedelta(hours=2), BERLIN, 1)
    assert fixed.astimezone(BERLIN).strftime("%H:%M") == "03:00"
    assert not _fires_at("* 2 * * *", fixed, BERLIN)
    assert compare_schedules("* 2 * * *", "30 2 * * *", zone=BERLIN).verdict == "widens"
    assert compare_schedules("* 2 * * *", "30 2 * * *", zone=UTC).verdict == "narrows"


def test_the_shape_of_a_schedule_ignores_its_spelling() -> None:
    """issue 12 item 7: names, numbers, ranges and lists of one schedule are one shape."""
    assert cron_shape("0 15 * * 5") == cron_shape("0 15 * * FRI")
    assert cron_shape("0 9 * * MON-FRI") == cron_shape("0 9 * * 1,2,3,4,5")
    assert cron_shape("0 9 * JAN-MAR SUN") == cron_shape("0 9 * 1-3 7")
