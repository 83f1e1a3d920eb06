"""How times, money and states read on screen: short, stable, and the same on every screen."""

from __future__ import annotations

from datetime import UTC, datetime

from hz_kernel.clock import now_utc

#: The order states sort in: what needs a look first.
#: Characters a terminal would act on instead of showing (escape sequences, a clipboard write,
#: a title change, a reordering of the line), each mapped to a visible stand-in: the C0
#: controls to their Unicode control pictures (␛, ␇, ␍), DEL to ␡, the C1 controls and the
#: bidirectional overrides and isolates to U+FFFD. Newlines and tabs stay.
_INERT = (
    {code: 0x2400 + code for code in range(32) if code not in (0x09, 0x0A)}
    | {0x7F: 0x2421}
    | {code: 0xFFFD for code in range(0x80, 0xA0)}
    | {code: 0xFFFD for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
)


def visible(text: str) -> str:
    """``text`` safe to draw: what would control the terminal is shown as a symbol instead.

    Documents, sources and model output are written by others (a note, a
    commit message, a pull request title); none of it may clear the screen
    or write to the clipboard of whoever reads it in the cockpit.
    """
    return text.replace("\r\n", "\n").translate(_INERT)


STATE_ORDER = {"awake": 0, "waiting": 1, "asleep": 2, "paused": 3, "proposed": 4, "retired": 5}


def parse_time(value: str | None) -> datetime | None:
    """An ISO time from the kernel (``Z`` or offset), or None when absent or unreadable."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def span(seconds: float, *, exact: bool = True) -> str:
    """A duration in its largest unit, plus the next one when ``exact``: ``3h 5m`` or ``3h``."""
    seconds = int(abs(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m" if minutes and exact else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours and exact else f"{days}d"


def ago(value: str | None, now: datetime | None = None, *, exact: bool = True) -> str:
    """``5m ago`` for a past time, ``in 5m`` for a future one, ``—`` for none."""
    moment = parse_time(value)
    if moment is None:
        return "—"
    delta = ((now or now_utc()) - moment).total_seconds()
    if abs(delta) < 1:
        return "now"
    length = span(delta, exact=exact)
    return f"{length} ago" if delta > 0 else f"in {length}"


def due(value: str | None, now: datetime | None = None) -> str:
    """When something is due: ``in 3h``, ``late 2d``, or ``—`` (one unit: it is a glance)."""
    moment = parse_time(value)
    if moment is None:
        return "—"
    delta = (moment - (now or now_utc())).total_seconds()
    length = span(delta, exact=False)
    return f"in {length}" if delta >= 0 else f"late {length}"


def usd(amount: float) -> str:
    """Money as users read it: two decimals, more only below a cent."""
    if 0 < amount < 0.01:
        return f"${amount:.4f}"
    return f"${amount:.2f}"


def queued(reason: str) -> str:
    """Why a turn waits for the kernel's admission: ``queued: capacity``, ``queued: low memory``."""
    return f"queued: {reason.replace('-', ' ')}"


def clock(value: str | None) -> str:
    """A stored UTC time as ``YYYY-MM-DD HH:MM`` (the spine's own zone)."""
    moment = parse_time(value)
    return moment.strftime("%Y-%m-%d %H:%M") if moment else "—"
