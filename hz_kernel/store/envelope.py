"""The spine line: an envelope around one event, and how it is encoded.

A line is a JSON object with the keys ``v, seq, ts, prev, turn, kind, key,
data`` in that order, UTF-8, no whitespace, ending in ``\\n``. ``prev`` is
the SHA-256 (hex) of the previous line's bytes without its newline; the
first line's ``prev`` is ``GENESIS``. See ``docs/format.md``.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

import orjson

from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError
from hz_kernel.vocabulary import ENVELOPE_VERSION, EventData, migrate, parse_payload

GENESIS = "0" * 64
#: Spine lines are small (no content); anything bigger is refused on write.
MAX_EVENT_BYTES = 16 * 1024
#: A reader treats longer lines as damage without trying to parse them.
MAX_LINE_BYTES = 1024 * 1024

#: An event's seq, read without a Python call per bisection step.
_SEQ = attrgetter("seq")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_FORBIDDEN_FIELDS = frozenset({"text", "draft", "transcript"})


@dataclass(slots=True)
class Event:
    """One spine line as read back; treat it as read-only.

    A plain slots dataclass rather than a pydantic model: readers build one
    per line (a reindex builds a hundred thousand), payloads were validated
    when written, and ``payload()`` gives the typed, migrated model on demand.
    Not ``frozen``: that makes each construction five times dearer, which a
    reindex paid a hundred thousand times.
    """

    v: int
    seq: int
    ts: str
    prev: str
    turn: str | None
    kind: str
    key: str | None
    data: dict[str, Any]
    offset: int = 0
    hash: str = ""

    def payload(self) -> EventData | None:
        kind, data = migrate(self.kind, self.data)
        return parse_payload(kind, data)

    @property
    def current_kind(self) -> str:
        return migrate(self.kind, self.data)[0]

    @property
    def when(self) -> datetime:
        return datetime.fromisoformat(self.ts)

    def to_dict(self) -> dict[str, Any]:
        """The envelope as written (the wire form of the feed)."""
        return {
            "v": self.v,
            "seq": self.seq,
            "ts": self.ts,
            "prev": self.prev,
            "turn": self.turn,
            "kind": self.kind,
            "key": self.key,
            "data": self.data,
        }


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def utc_stamp(moment: datetime | None = None) -> str:
    """An ISO-8601 UTC timestamp with microseconds and a ``Z`` (``HZ_NOW`` pins it).

    One format of the fields: every spine line is stamped, and ``replace`` plus
    ``isoformat`` cost several times more.
    """
    moment = moment or now_utc()
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ" % (  # noqa: UP031  (cheaper than an f-string)
        moment.year, moment.month, moment.day,
        moment.hour, moment.minute, moment.second, moment.microsecond,
    )  # fmt: skip


def _check_no_content(data: dict[str, Any], where: str) -> None:
    """Refuse content fields and e-mail addresses anywhere in a payload.

    Types are compared, not ``isinstance``-checked: payloads come from
    ``model_dump(mode="json")`` (plain dicts, lists and strings), and every
    spine line is walked.
    """
    for name, value in data.items():
        if name in _FORBIDDEN_FIELDS:
            raise HzError("HZS051", f"field {name!r} would put content in the spine", where)
        kind = type(value)
        if kind is str:
            if "@" in value and _EMAIL.search(value):
                raise HzError("HZS052", f"field {name!r} carries an e-mail address", where)
        elif kind is dict:
            _check_no_content(value, where)
        elif kind is list:
            for item in value:
                if type(item) is dict:
                    _check_no_content(item, where)
                elif type(item) is str and "@" in item and _EMAIL.search(item):
                    raise HzError("HZS052", f"field {name!r} carries an e-mail address", where)


def encode(
    payload: EventData,
    *,
    seq: int,
    prev: str,
    turn: str | None,
    key: str | None,
    ts: datetime | None = None,
) -> bytes:
    """The bytes of one spine line, without the newline, after the content checks."""
    data = payload.model_dump(mode="json", exclude_none=True)
    return encode_data(payload.kind, data, seq=seq, prev=prev, turn=turn, key=key, ts=ts)


def encode_data(
    kind: str,
    data: dict[str, Any],
    *,
    seq: int,
    prev: str,
    turn: str | None,
    key: str | None,
    ts: datetime | str | None = None,
) -> bytes:
    """Encode an already-dumped payload; refuses content fields, e-mail addresses, huge lines.

    ``ts`` may be a stamp already made: a staged line keeps its time however
    often it is encoded, and is stamped once.
    """
    _check_no_content(data, kind)
    line = orjson.dumps(
        {
            "v": ENVELOPE_VERSION,
            "seq": seq,
            "ts": ts if isinstance(ts, str) else utc_stamp(ts),
            "prev": prev,
            "turn": turn,
            "kind": kind,
            "key": key,
            "data": data,
        }
    )
    if len(line) > MAX_EVENT_BYTES:
        raise HzError("HZS022", f"event of {len(line)} bytes exceeds {MAX_EVENT_BYTES}", kind)
    return line


def seq_index(events: Sequence[Event], seq: int) -> int:
    """Where the event ``seq`` is (or would be) in ``events``, found by bisection: a spine's
    events are in seq order, so a turn that reads its own lines pays for them, not for the
    whole history."""
    return bisect.bisect_left(events, seq, key=_SEQ)


def since_seq(events: Sequence[Event], seq: int) -> Sequence[Event]:
    """The events from ``seq`` on."""
    return events[seq_index(events, seq) :]
