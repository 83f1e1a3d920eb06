"""Reading a spine back: decode every line and check the chain in one pass.

The reader never raises on a bad line. Damage is sorted into two kinds:

* a **torn tail** — bytes after the last newline, or a last line holding NUL
  padding — is what a crash mid-append leaves. Readers do not see it; the
  next writer cuts it off and keeps a copy (``repair.py``).
* a **chain break** anywhere else — an edited, deleted, reordered or
  unreadable line — is reported with its seq and byte offset. It is never
  repaired automatically; the user accepts it with ``hz heinzel verify
  NAME --accept`` and a ``chain.accepted`` event records that.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from hz_kernel.errors import HzError
from hz_kernel.store.envelope import GENESIS, MAX_LINE_BYTES, Event
from hz_kernel.store.fsutil import open_regular, read_all, store_error
from hz_kernel.vocabulary import payload_fault

Problem = Literal[
    "edited",
    "missing",
    "reordered",
    "unreadable",
    "not-an-object",
    "too-long",
    "truncated",
    "mistyped",
]


class ChainBreak(BaseModel):
    """One place where the chain does not hold."""

    model_config = ConfigDict(defer_build=True)

    seq: int | None
    offset: int
    problem: Problem
    detail: str
    #: The hash of the line at ``offset`` as it is now, so an acceptance covers these bytes only.
    hash: str = ""

    def matches(self, accepted: dict[str, object]) -> bool:
        """True when ``accepted`` (a ``chain.accepted`` mark) covers this break as it is now.

        A mark pins the line's hash: a line edited again after ``verify
        --accept`` is a new break. Marks written before hashes were pinned
        match by place and problem alone.
        """
        return (
            accepted.get("offset") == self.offset
            and accepted.get("problem") == self.problem
            and accepted.get("hash", self.hash) == self.hash
        )


class TornTail(BaseModel):
    model_config = ConfigDict(defer_build=True)

    offset: int
    size: int
    nul_padding: bool


@dataclass(slots=True)
class SpineScan:
    """What one pass over a spine found."""

    path: Path
    size: int = 0
    events: list[Event] = field(default_factory=list)
    breaks: list[ChainBreak] = field(default_factory=list)
    accepted: list[ChainBreak] = field(default_factory=list)
    torn: TornTail | None = None
    last_seq: int = 0
    last_hash: str = GENESIS
    #: Where the line of ``last_seq`` starts.
    last_offset: int = 0
    lines: int = 0

    @property
    def intact(self) -> bool:
        return not self.breaks

    @property
    def valid_end(self) -> int:
        return self.torn.offset if self.torn else self.size


def read_spine_bytes(path: Path) -> bytes:
    """The spine's bytes; a missing file reads as empty, anything not a file is an error.

    A FIFO, socket, device, directory or link is refused at once (never
    opened for a blocking read), so a hostile spine cannot hang a listing.
    """
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        reason = f"spine is not a readable regular file ({exc.strerror})"
        raise HzError("HZS011", reason, str(path)) from None
    try:
        return read_all(fd)
    except OSError as exc:
        raise store_error(exc, path) from None
    finally:
        os.close(fd)


#: The keys of a line as the writer lays them out, in order: ``Event``'s first fields.
_LAYOUT = ("v", "seq", "ts", "prev", "turn", "kind", "key", "data")
_REQUIRED = ("seq", "ts", "prev", "turn", "kind", "key", "data")


def _decode(line: bytes) -> tuple[Any, ...] | Problem:
    """The line's envelope fields in ``Event`` order, or what is wrong with it.

    Only what chains a line (an int ``seq``, a text ``prev``) is checked here;
    the rest of a line that chains is judged by ``_fault``, so its break can
    name the seq.
    """
    if len(line) > MAX_LINE_BYTES:
        return "too-long"
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "unreadable"
    if type(obj) is not dict:
        return "not-an-object"
    if tuple(obj) == _LAYOUT:  # the writer's own layout: no lookup per field
        fields = tuple(obj.values())
    elif len(obj) >= 8 and all(name in obj for name in _REQUIRED):
        fields = (obj.get("v", 1), *(obj[name] for name in _REQUIRED))
    else:
        return "not-an-object"
    if type(fields[1]) is int and type(fields[3]) is str:
        return fields
    return "not-an-object"


def _fault(fields: tuple[Any, ...]) -> str | None:
    """What makes a line that chains unfit to be read as an event, or None.

    Every reader past the scan (the index fold, ``Event.payload()``, the
    feed, listings that compare ``ts`` as text) trusts the envelope's and the
    payload's types; a hand-edited line of the wrong types is damage here
    instead of a crash there.
    """
    v, _, ts, _, turn, kind, key, data = fields
    if (
        type(v) is int
        and type(ts) is str
        and type(kind) is str
        and (turn is None or type(turn) is str)
        and (key is None or type(key) is str)
        and type(data) is dict
    ):
        return payload_fault(kind, data)
    if type(v) is not int:
        return "its v is not a number"
    if type(data) is not dict:
        return "its data is not an object"
    return "its ts, kind, turn or key is not text"


def _describe(problem: Problem, size: int) -> str:
    return {
        "too-long": f"a line of {size} bytes exceeds the {MAX_LINE_BYTES}-byte limit",
        "unreadable": "the line is not valid JSON",
        "not-an-object": "the line is not a spine event object",
    }.get(problem, problem)


_HEAD = '{"v":1,"seq":'
_TS = ',"ts":"'
_PREV = '","prev":"'
#: ``utc_stamp``'s length: the writer's ``ts`` always has microseconds and a ``Z``.
_TS_LEN = len("2026-01-01T00:00:00.000000Z")
_ACCEPTED = b'"kind":"chain.accepted"'


def _by_digits(lines: int) -> Iterator[tuple[int, int, int]]:
    """(digits, first, end) for the lines whose seq has that many digits: where the
    writer's layout puts ``prev`` moves by one byte per digit of ``seq``."""
    digits, low = 1, 1
    while low <= lines:
        yield digits, low - 1, min(lines, low * 10 - 1)
        digits, low = digits + 1, low * 10


def _intact_fast(data: bytes, end: int) -> tuple[int, int, str, int] | None:
    """(lines, last seq, last hash, its offset) when every line is canonical and chained,
    else None.

    Verifying a chain needs only each line's ``seq`` and ``prev``: an edit to
    any byte of a line changes its hash, which the next line's ``prev`` then
    fails to match. The writer's layout puts both at places fixed by the
    number of digits of ``seq``, so the common case — an intact spine — is
    one slice per field and one hash per line, each joined and compared
    once, without parsing JSON. Any surprise returns None and the full
    decode explains it.
    """
    body = data[:end]
    if _ACCEPTED in body:
        return None
    lines = body.split(b"\n")
    lines.pop()
    heads: list[bytes] = []
    prevs: list[bytes] = []
    for digits, first, stop in _by_digits(len(lines)):
        group = lines[first:stop]
        head = len(_HEAD) + digits + len(_TS)
        heads += [line[:head] for line in group]
        at = head + _TS_LEN
        prevs += [line[at : at + len(_PREV) + 64] for line in group]
    seqs = (_TS + _HEAD).join(map(str, range(1, len(lines) + 1)))
    if b"".join(heads) != f"{_HEAD}{seqs}{_TS}".encode():
        return None
    sha256 = hashlib.sha256
    hashes = [sha256(line).hexdigest() for line in lines]
    if b"".join(prevs) != (_PREV + _PREV.join([GENESIS, *hashes[:-1]])).encode():
        return None
    return len(lines), len(lines), hashes[-1], end - len(lines[-1]) - 1


def _events_fast(lines: list[bytes]) -> list[Event] | None:
    """Every line as an event when each is the writer's layout, chained, in order and of
    the types its kind has; else None, and the full decode explains what is wrong.

    A reindex reads a hundred thousand lines, nearly all whole: one tight loop
    that stops at the first surprise costs less than sorting each line into
    its kind of damage.
    """
    events: list[Event] = []
    append = events.append
    loads, sha256 = orjson.loads, hashlib.sha256
    prev, pos = GENESIS, 0
    for expected, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_BYTES:
            return None
        try:
            obj = loads(line)
        except orjson.JSONDecodeError:
            return None
        if type(obj) is not dict or tuple(obj) != _LAYOUT:
            return None
        v, seq, ts, prev_seen, turn, kind, key, data = obj.values()
        if not (
            type(seq) is int
            and seq == expected
            and prev_seen == prev
            and type(v) is int
            and type(ts) is str
            and type(kind) is str
            and (turn is None or type(turn) is str)
            and (key is None or type(key) is str)
            and type(data) is dict
            and payload_fault(kind, data) is None
        ):
            return None
        prev = sha256(line).hexdigest()
        append(Event(v, seq, ts, prev_seen, turn, kind, key, data, pos, prev))
        pos += len(line) + 1
    return events


def _chain_break(
    result: SpineScan,
    seq: int,
    prev_seq: int,
    prev_hash: str,
    prev_offset: int,
    pos: int,
    digest: str,
) -> None:
    """Note why a line's ``prev`` is not the hash of the line before it."""
    if seq > prev_seq + 1:
        result.breaks.append(
            ChainBreak(
                seq=prev_seq + 1,
                offset=pos,
                problem="missing",
                detail=f"seq {prev_seq + 1}..{seq - 1} missing before seq {seq}",
                hash=digest,
            )
        )
    else:
        result.breaks.append(
            ChainBreak(
                seq=prev_seq,
                offset=prev_offset,
                problem="edited",
                detail=f"seq {prev_seq} no longer matches the hash seq {seq} recorded",
                hash=prev_hash,
            )
        )


def scan(data: bytes, path: Path, *, collect: bool = True) -> SpineScan:
    """Decode and chain-check a spine's bytes. Never raises on damage.

    With ``collect=False`` (verification) an intact spine is checked by a
    fast path that reads only ``seq`` and ``prev``, not what the lines hold
    (a payload of the wrong types): its caller trusts that only for lines an
    index fold already read. Damage falls back to the full decode so it can
    be explained.
    """
    result = SpineScan(path=path, size=len(data))
    end = data.rfind(b"\n") + 1
    if end < len(data):
        result.torn = TornTail(offset=end, size=len(data) - end, nul_padding=b"\x00" in data[end:])
    if end:
        last_start = data.rfind(b"\n", 0, end - 1) + 1
        if b"\x00" in data[last_start : end - 1]:
            result.torn = TornTail(offset=last_start, size=len(data) - last_start, nul_padding=True)
            end = last_start

    if not collect and end:
        fast = _intact_fast(data, end)
        if fast is not None:
            result.lines, result.last_seq, result.last_hash, result.last_offset = fast
            return result

    lines = data[:end].split(b"\n")
    lines.pop()
    result.lines = len(lines)
    if collect and lines:
        events = _events_fast(lines)
        if events is not None:
            last = events[-1]
            result.events = events
            result.last_seq, result.last_hash, result.last_offset = last.seq, last.hash, last.offset
            return result

    prev_hash, prev_seq, prev_offset = GENESIS, 0, 0
    prev_bad = False
    accepted_marks: list[dict[str, object]] = []
    pos = 0
    events = result.events
    sha256 = hashlib.sha256
    for line in lines:
        digest = sha256(line).hexdigest()
        decoded = _decode(line)
        if isinstance(decoded, str):
            result.breaks.append(
                ChainBreak(
                    seq=None,
                    offset=pos,
                    problem=decoded,
                    detail=_describe(decoded, len(line)),
                    hash=digest,
                )
            )
            prev_bad = True
        else:
            seq, prev, kind, payload = decoded[1], decoded[3], decoded[5], decoded[7]
            if prev != prev_hash and not prev_bad:
                _chain_break(result, seq, prev_seq, prev_hash, prev_offset, pos, digest)
            elif seq != prev_seq + 1 and not prev_bad:
                result.breaks.append(
                    ChainBreak(
                        seq=seq,
                        offset=pos,
                        problem="reordered",
                        detail=f"seq {seq} follows seq {prev_seq}",
                        hash=digest,
                    )
                )
            fault = _fault(decoded)
            if fault is not None:
                result.breaks.append(
                    ChainBreak(
                        seq=seq,
                        offset=pos,
                        problem="mistyped",
                        detail=f"seq {seq} is no event hz can read: {fault}",
                        hash=digest,
                    )
                )
            else:
                if kind == "chain.accepted":
                    accepted_marks.extend(payload["breaks"])
                if collect:
                    events.append(Event(*decoded, pos, digest))
            prev_seq, prev_bad, result.last_offset = seq, False, pos
        prev_hash, prev_offset = digest, pos
        pos += len(line) + 1

    result.last_seq, result.last_hash = prev_seq, prev_hash
    if accepted_marks:
        open_breaks = []
        for brk in result.breaks:
            (
                result.accepted if any(brk.matches(m) for m in accepted_marks) else open_breaks
            ).append(brk)
        result.breaks = open_breaks
    return result


def index_break(seen: tuple[int, str | None] | None, found: SpineScan) -> ChainBreak | None:
    """What the index knows that the spine contradicts: lines cut off, or a line changed.

    The chain cannot see a spine cut at a line boundary, nor an edit of its
    last line (no later line records its hash). The index can: it keeps
    the seq and hash of the last line it saw. A spine that ends before that
    seq, or whose line at that seq hashes differently, is damaged. Needs
    ``found.events`` unless the seq the index saw is the spine's last.
    """
    if seen is None or not seen[0]:
        return None
    seq, digest = seen
    if seq > found.last_seq:
        return ChainBreak(
            seq=seq,
            offset=found.valid_end,
            problem="truncated",
            detail=f"the spine ends at seq {found.last_seq}, the index saw seq {seq}: "
            "lines were cut off",
        )
    if seq == found.last_seq:
        here, offset = found.last_hash, found.last_offset
    else:
        event = next((e for e in found.events if e.seq == seq), None)
        if event is None:
            return None
        here, offset = event.hash, event.offset
    if digest is None or here == digest:
        return None
    return ChainBreak(
        seq=seq,
        offset=offset,
        problem="edited",
        detail=f"seq {seq} changed after it was written (the index saw another hash)",
        hash=here,
    )


def scan_file(path: Path, *, collect: bool = True) -> SpineScan:
    return scan(read_spine_bytes(path), path, collect=collect)
