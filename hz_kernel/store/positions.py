"""Durable feed positions: one global, increasing number per spine line, kept in the index.

The feed numbers spine events across every heinzel of a home. A number
must mean the same line after a daemon restart, so it is assigned in the
index (table ``feed``: position → spine, seq, byte offset; ``feed_spine``
numbers the spines, so the table and its (spine, seq) key hold integers
only, which keeps positioning a whole home cheap), in the same
commit as the rows that line changed, by whichever process wrote the line;
a line another process appended without indexing it gets its position
when the index next catches up with that spine (``reconcile``, a reindex,
the writer's next append). Positions come from SQLite's ``AUTOINCREMENT``:
never reused, even after rows go, so they increase but need not be
contiguous.

The index is derived and may be deleted or rebuilt; its positions then
start again. Each index has a ``generation`` (table ``meta``), minted when
its position table starts, so a reader holding a position from another
generation learns it is meaningless instead of getting other events.

``FeedRows`` reads positioned events back: the table says where each line
is (``rows``), the spine holds the line itself, the envelope the feed
carries (``lines``, one read per spine for any number of its lines).
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

import orjson

from hz_kernel.store.fsutil import open_regular

if TYPE_CHECKING:
    from hz_kernel.store.index import Index

DDL = (
    "CREATE TABLE IF NOT EXISTS feed_spine (id INTEGER PRIMARY KEY, heinzel TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS feed (pos INTEGER PRIMARY KEY AUTOINCREMENT, "
    "spine INTEGER NOT NULL, seq INTEGER NOT NULL, offset INTEGER NOT NULL, "
    "UNIQUE (spine, seq))",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
#: Dropping ``feed`` also drops its ``AUTOINCREMENT`` counter (SQLite's ``sqlite_sequence``).
TABLES = ("feed", "feed_spine", "meta")

#: Position → (heinzel, seq) of every line a write positioned.
Positions = dict[tuple[str, int], int]


def _minted() -> str:
    """A fresh generation id. ``ulid`` is imported here: its import looks up its own
    package version (~30 ms), a cost a cockpit's first frame need not pay."""
    from ulid import ULID

    return str(ULID())


def prepare(w: sqlite3.Connection) -> str:
    """Create the tables and return the index's generation (minted on first use)."""
    for ddl in DDL:
        w.execute(ddl)
    row = w.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    if row is not None:
        return str(row[0])
    generation = _minted()
    w.execute("INSERT INTO meta (key, value) VALUES ('generation', ?)", (generation,))
    return generation


def new_generation(w: sqlite3.Connection) -> str:
    """Mint a new generation: every position handed out so far stops meaning anything."""
    generation = _minted()
    w.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (generation,))
    return generation


def edge(w: sqlite3.Connection) -> int:
    """The highest position ever assigned in this generation (0: none yet)."""
    row = w.execute("SELECT seq FROM sqlite_sequence WHERE name = 'feed'").fetchone()
    return int(row[0]) if row else 0


class Placed(Protocol):
    """What a position needs of a line: an ``Event``, or a ``Spot`` kept in its stead."""

    @property
    def seq(self) -> int: ...
    @property
    def ts(self) -> str: ...
    @property
    def offset(self) -> int: ...


class Spot(NamedTuple):
    """A line's seq, timestamp and offset: a rebuild keeps these, not its events."""

    seq: int
    ts: str
    offset: int


_SPOT_FIELDS = attrgetter("seq", "ts", "offset")
_new_spot = functools.partial(tuple.__new__, Spot)


def spots(lines: Iterable[Placed]) -> list[Spot]:
    """What positioning needs of each line, made without a Python call per line (a reindex
    keeps a hundred thousand)."""
    return spots_of(map(_SPOT_FIELDS, lines))


def spots_of(fields: Iterable[tuple[int, str, int]]) -> list[Spot]:
    """Spots from plain (seq, ts, offset) tuples, as a worker process hands them back."""
    return list(map(_new_spot, fields))


#: The highest position ever handed out: ``AUTOINCREMENT``'s counter, or the table's
#: highest row where the counter is gone.
_EDGE = (
    "MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'feed'), 0), "
    "COALESCE((SELECT MAX(pos) FROM feed), 0))"
)
_SPINE_AND_HIGHEST = (
    f"SELECT s.id, (SELECT MAX(seq) FROM feed WHERE spine = s.id), {_EDGE} "
    "FROM feed_spine AS s WHERE s.heinzel = ?"
)


def _spine_and_highest(w: sqlite3.Connection, heinzel_id: str) -> tuple[int, int, int]:
    """The number ``feed`` knows the spine of ``heinzel_id`` by (given on first use), the
    highest seq positioned for it (0: none) and the position ``AUTOINCREMENT`` would hand out
    next: one statement for a known spine, as every append of a held heinzel asks."""
    row = w.execute(_SPINE_AND_HIGHEST, (heinzel_id,)).fetchone()
    if row is None:
        w.execute("INSERT INTO feed_spine (heinzel) VALUES (?)", (heinzel_id,))
        row = w.execute(_SPINE_AND_HIGHEST, (heinzel_id,)).fetchone()
    number, highest, edge = row
    return int(number), int(highest) if highest is not None else 0, int(edge) + 1


def assign(
    w: sqlite3.Connection, spines: Mapping[str, Sequence[Placed]], *, report: bool = True
) -> tuple[Positions, bool]:
    """Position every line of ``spines`` the table has not seen; True if the generation must end.

    Only lines past the highest seq already positioned for their heinzel
    are new, so a writer passes its whole in-memory spine and pays for its
    tail. A spine now shorter than what was positioned (cut off, then its
    damage accepted) has lost lines readers were given: its rows are
    replaced and the caller mints a new generation. New lines of several
    spines are interleaved by timestamp, each spine in its own order. The
    positions given are returned when ``report`` asks for them.
    """
    renumbered = False
    new: list[tuple[str, int, int, int]] = []
    names: dict[int, str] = {}
    after = 0
    for heinzel_id, events in spines.items():
        if not events:
            continue
        spine, have, next_free = _spine_and_highest(w, heinzel_id)
        # The first look is taken before any row goes or comes: deleting a cut spine's rows
        # below lowers no counter, and nothing is inserted until the end.
        after = after or next_free
        names[spine] = heinzel_id
        if events[-1].seq < have:
            w.execute("DELETE FROM feed WHERE spine = ?", (spine,))
            renumbered, have = True, 0
        start = len(events)
        while start > 0 and events[start - 1].seq > have:
            start -= 1
        # Sorted by the latest timestamp so far in its spine, a spine's lines keep
        # their order even where its clock went back; the sort is stable.
        latest = ""
        for event in events[start:]:
            if event.seq > have:
                if event.ts > latest:
                    latest = event.ts
                new.append((latest, spine, event.seq, event.offset))
                have = event.seq
    if not new:
        return {}, renumbered
    new.sort(key=itemgetter(0))
    # One statement for all rows, numbered as AUTOINCREMENT would: after the
    # highest position ever handed out (nothing else inserts in this transaction).
    rows = [(pos, spine, seq, offset) for pos, (_, spine, seq, offset) in enumerate(new, after)]
    w.executemany("INSERT INTO feed (pos, spine, seq, offset) VALUES (?, ?, ?, ?)", rows)
    if not report:
        return {}, renumbered
    positions: Positions = {(names[spine], seq): pos for pos, spine, seq, _ in rows}
    return positions, renumbered


#: A line as a rebuild stages it: its spine's place in the rebuild's order, its seq, the latest
#: timestamp of its spine up to it, and its offset.
Staged = tuple[int, int, str, int]


def staged(place: int, lines: Iterable[Placed]) -> list[Staged]:
    """What positioning needs of each line of one spine, made where the spine is folded (a
    worker process), so the process that writes the index adds no Python call per line.

    A line whose seq is not above every seq before it is left out, as ``assign`` leaves it.
    """
    rows: list[Staged] = []
    have, latest = 0, ""
    for line in lines:
        if line.seq > have:
            if line.ts > latest:
                latest = line.ts
            rows.append((place, line.seq, latest, line.offset))
            have = line.seq
    return rows


_STAGING_DDL = (
    "CREATE TEMP TABLE staged_feed "
    "(place INTEGER NOT NULL, seq INTEGER NOT NULL, latest TEXT NOT NULL, offset INTEGER NOT NULL)",
    "CREATE TEMP TABLE staged_spine "
    "(place INTEGER PRIMARY KEY, spine INTEGER NOT NULL, have INTEGER NOT NULL)",
)
_STAGING_DROP = ("DROP TABLE IF EXISTS temp.staged_feed", "DROP TABLE IF EXISTS temp.staged_spine")
#: ``assign``'s order in SQL: the lines past what was positioned, by the latest timestamp of
#: their spine so far, then by the spine's place and the line's seq.
_POSITION_STAGED = (
    "INSERT INTO feed (spine, seq, offset) SELECT p.spine, s.seq, s.offset "
    "FROM temp.staged_feed AS s JOIN temp.staged_spine AS p ON p.place = s.place "
    "WHERE s.seq > p.have ORDER BY s.latest, s.place, s.seq"
)


class Staging:
    """Positions for a whole home's spines, given as ``assign`` gives them, staged spine by
    spine while the rest is still being folded and handed out in one statement at the end.

    Lives inside the caller's transaction: its tables are temporary (this connection's) and
    gone when it ends, so a rollback leaves nothing behind. The one difference from
    ``assign``: a line's latest timestamp counts from its spine's first line, not from its
    first line not yet positioned (a worker that stages it cannot know which that is).
    """

    def __init__(self, w: sqlite3.Connection) -> None:
        self.w = w
        self.renumbered = False
        for ddl in (*_STAGING_DROP, *_STAGING_DDL):
            w.execute(ddl)

    def add(self, spines: Sequence[tuple[str, list[Staged]]]) -> None:
        """Stage the lines of ``spines`` (heinzel id and its ``staged`` lines)."""
        places: list[tuple[int, int, int]] = []
        for heinzel_id, rows in spines:
            if not rows:
                continue
            spine, have, _ = _spine_and_highest(self.w, heinzel_id)
            if rows[-1][1] < have:
                self.w.execute("DELETE FROM feed WHERE spine = ?", (spine,))
                self.renumbered, have = True, 0
            if rows[-1][1] > have:
                places.append((rows[0][0], spine, have))
                self.w.executemany("INSERT INTO temp.staged_feed VALUES (?, ?, ?, ?)", rows)
        self.w.executemany("INSERT INTO temp.staged_spine VALUES (?, ?, ?)", places)

    def assign(self) -> bool:
        """Position every staged line; True if the generation must end (as ``assign``)."""
        self.w.execute(_POSITION_STAGED)
        for ddl in _STAGING_DROP:
            self.w.execute(ddl)
        return self.renumbered


def forget(w: sqlite3.Connection, heinzel_ids: Sequence[tuple[str]]) -> None:
    """Drop the positions of spines that are gone (their numbers are never reused)."""
    spine_of = "(SELECT id FROM feed_spine WHERE heinzel = ?)"
    w.executemany(f"DELETE FROM feed WHERE spine = {spine_of}", heinzel_ids)
    w.executemany("DELETE FROM feed_spine WHERE heinzel = ?", heinzel_ids)


class Row(NamedTuple):
    """Where the index says one positioned line is (a tuple: a replay makes thousands)."""

    position: int
    heinzel: str
    seq: int
    offset: int


@dataclass(frozen=True, slots=True)
class Line:
    """One positioned spine line as the feed carries it."""

    position: int
    heinzel: str
    seq: int
    turn: str | None
    raw: bytes
    """The line's bytes: the envelope, exactly as the spine holds it."""
    stamp: FileStamp
    """The spine file as it was when the line was read."""


class FileStamp(NamedTuple):
    """Which version of a file was read: any write or replacement changes one of these."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileStamp:
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ino)


class SpineChanged(Exception):
    """A positioned line is no longer in its spine (the spine was cut or rewritten)."""


class FeedRows:
    """Reads positioned lines of one home's index back from the spines."""

    def __init__(self, index: Index, spine_of: Callable[[str], Path]) -> None:
        self.index = index
        self.spine_of = spine_of
        self.spine_reads = 0
        """Spine files read so far (each ``lines`` call reads each spine it needs once)."""

    @property
    def generation(self) -> str:
        return self.index.generation

    def edge(self) -> int:
        return edge(self.index.writer)

    def stamp(self, heinzel_id: str) -> FileStamp | None:
        """The spine of ``heinzel_id`` as it is now (None: it cannot be read)."""
        try:
            return FileStamp.of(os.stat(self.spine_of(heinzel_id)))
        except OSError:
            return None

    def rows(self, after: int, upto: int, limit: int) -> list[Row]:
        """Up to ``limit`` rows with ``after < position <= upto``, in position order."""
        cursor = self.index.writer.execute(
            "SELECT pos, heinzel, seq, offset FROM feed JOIN feed_spine ON spine = feed_spine.id "
            "WHERE pos > ? AND pos <= ? ORDER BY pos LIMIT ?",
            (after, upto, limit),
        )
        return list(map(Row._make, cursor))

    def lines(self, rows: Iterable[Row]) -> list[Line]:
        """The lines at ``rows``, in position order, reading each spine once.

        Raises ``SpineChanged`` when a line cannot be found where the index
        put it, nor at its seq anywhere in its spine.
        """
        by_spine: dict[str, list[Row]] = {}
        for row in rows:
            by_spine.setdefault(row.heinzel, []).append(row)
        found: list[Line] = []
        for heinzel_id, wanted in by_spine.items():
            self.spine_reads += 1
            found.extend(_read_lines(self.spine_of(heinzel_id), heinzel_id, wanted))
        found.sort(key=lambda line: line.position)
        return found


def _read_lines(path: Path, heinzel_id: str, wanted: list[Row]) -> list[Line]:
    """The lines at ``wanted`` (rows of one spine), with one read (two if lines moved).

    A line that is not at its offset (the spine was edited by hand: every
    offset after the edit is stale) is looked up in a map of the whole
    spine, built once for all of ``wanted``: one pass over the file, not
    one per moved line.
    """
    first = min(row.offset for row in wanted)
    last = max(row.offset for row in wanted)
    try:
        fd = open_regular(path, os.O_RDONLY)
    except OSError:
        raise SpineChanged(heinzel_id) from None
    try:
        stamp = FileStamp.of(os.fstat(fd))
        chunk = os.pread(fd, last - first + _TAIL, first)
        lines: list[Line] = []
        moved: dict[int, tuple[dict[str, object], bytes]] | None = None
        for row in wanted:
            line = _line_at(chunk, row.offset - first, row.seq)
            if line is None:
                if moved is None:
                    moved = _lines_by_seq(fd, {row.seq for row in wanted})
                line = moved.get(row.seq)
            if line is None:
                raise SpineChanged(heinzel_id)
            envelope, raw = line
            turn = envelope.get("turn")
            lines.append(
                Line(
                    row.position,
                    heinzel_id,
                    row.seq,
                    turn if isinstance(turn, str) else None,
                    raw,
                    stamp,
                )
            )
        return lines
    finally:
        os.close(fd)


#: Bytes read past the last wanted offset: more than any event line the writer produces.
_TAIL = 32 * 1024


def _line_at(chunk: bytes, start: int, seq: int) -> tuple[dict[str, object], bytes] | None:
    """The line starting at ``start`` of ``chunk`` if it is whole and holds ``seq``."""
    end = chunk.find(b"\n", start)
    if start < 0 or end < 0:
        return None
    raw = chunk[start:end]
    try:
        envelope = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(envelope, dict) or envelope.get("seq") != seq:
        return None
    return envelope, raw


def _lines_by_seq(fd: int, seqs: set[int]) -> dict[int, tuple[dict[str, object], bytes]]:
    """The whole lines of the spine holding one of ``seqs``, by seq, read in one pass."""
    found: dict[int, tuple[dict[str, object], bytes]] = {}
    for raw in os.pread(fd, os.fstat(fd).st_size, 0).split(b"\n")[:-1]:
        try:
            envelope = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        seq = envelope.get("seq") if isinstance(envelope, dict) else None
        if isinstance(seq, int) and seq in seqs:
            found[seq] = (envelope, raw)
    return found
