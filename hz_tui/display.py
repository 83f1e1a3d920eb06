"""How times, money and states read on screen: short, stable, and the same on every screen."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

from hz_kernel.clock import now_utc

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
#: The invisible format characters (Unicode category Cf, as of Unicode 15.1): zero-width
#: spaces and joiners, word joiner, byte order mark, bidi marks, soft hyphen, tags. They
#: hide text or a difference ("ad\u200bmin" reads as "admin"), so they show as U+FFFD too,
#: like the bidi overrides. The joiners (ZWNJ, ZWJ) and tags are left to ``_JOINERS``.
_FORMAT = (
    0x00AD,
    *range(0x0600, 0x0606),
    0x061C,
    0x06DD,
    0x070F,
    0x0890,
    0x0891,
    0x08E2,
    0x180E,
    0x200B,
    0x200E,
    0x200F,
    *range(0x2060, 0x2065),
    *range(0x206A, 0x2070),
    0xFEFF,
    *range(0xFFF9, 0xFFFC),
    0x110BD,
    0x110CD,
    *range(0x13430, 0x13440),
    *range(0x1BCA0, 0x1BCA4),
    *range(0x1D173, 0x1D17B),
)
_INERT |= dict.fromkeys(_FORMAT, 0xFFFD)
_EMOJI = "\u2190-\u21ff\u2300-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff"
#: Scripts whose words need ZWNJ/ZWJ to be written right (Arabic, Persian, the Indic scripts).
_JOINING = "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\u0900-\u0dff\ufb50-\ufdff\ufe70-\ufefe"
#: A joiner or tag stays where it builds a glyph: ZWJ inside an emoji sequence (👩‍💻),
#: ZWNJ/ZWJ between two letters of a joining script, the tags of a subdivision flag (🏴 +
#: "gbsct" + cancel tag); anywhere else it is hidden text and shows as U+FFFD.
_JOINERS = re.compile(
    f"(?P<kept>(?<=[{_EMOJI}])\u200d(?=[{_EMOJI}])"
    f"|(?<=[{_JOINING}])[\u200c\u200d](?=[{_JOINING}])"
    "|(?<=\U0001f3f4)[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f)"
    "|[\u200c\u200d\U000e0001\U000e0020-\U000e007f]"
)
_MAY_JOIN = re.compile("[\u200c\u200d\U000e0001\U000e0020-\U000e007f]")


def visible(text: str) -> str:
    """``text`` safe to draw: what would control the terminal is shown as a symbol instead,
    and what would be invisible (zero-width and other format characters) shows as U+FFFD.

    Documents, sources and model output are written by others (a note, a
    commit message, a pull request title); none of it may clear the screen,
    write to the clipboard of whoever reads it in the cockpit, or hide words
    from the one who approves them.
    """
    text = text.replace("\r\n", "\n").translate(_INERT)
    if _MAY_JOIN.search(text) is None:
        return text
    return _JOINERS.sub(lambda match: match["kept"] or "\ufffd", text)


#: The most of a user's own words (a filter) echoed back in a message or the status line.
ECHO_MAX = 40


def echoed(words: str, most: int = ECHO_MAX) -> str:
    """``words`` the user typed or pasted, as a message quotes them: inert, on one line, and
    cut with … after ``most`` characters (a 10,000-character paste must not fill the screen)."""
    shown = visible(" ".join(words.split()))
    return shown if len(shown) <= most else shown[: most - 1] + "…"


def path_pieces(path: str) -> list[str]:
    """``path`` cut after each ``/`` and before a ``#`` anchor: where it may break across
    lines."""
    return re.findall(r"[^/#]*/|#?[^/#]+", path) or [path]


def path_lines(path: str, width: int) -> list[str]:
    """``path`` in lines of at most ``width`` cells, broken after a ``/`` and never inside a
    name; a name wider than a line is cut with ….  (A path folded mid-name misreads:
    "d1.md#toda" then "y".)"""
    lines: list[str] = []
    for piece in path_pieces(path):
        if lines and len(lines[-1]) + len(piece) <= width:
            lines[-1] += piece
        else:
            lines.append(piece if len(piece) <= width else piece[: max(width - 1, 0)] + "…")
    return lines


def causes(names: Iterable[object]) -> str:
    """A turn's causes as they read: each once, in order. The kernel lists one per wake the
    turn answers, so two changed sources are "source-changed" twice there."""
    return ", ".join(dict.fromkeys(str(name) for name in names if name))


#: The order states sort in: what needs a look first.
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
