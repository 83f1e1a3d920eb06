"""The derived index: ``<home>/heinzel/index.sqlite`` (SQLite in WAL mode).

Reads go through aiosqlite, so a listing of hundreds never blocks the
event loop. Writes are the writer's small upserts after each durable spine
line; they use a plain ``sqlite3`` connection in the caller's thread, where
a commit (WAL, ``synchronous=NORMAL``: no fsync, the index is derived) costs
a fraction of a millisecond — less than a hop to aiosqlite's thread.

Every row comes from a ``Projection`` of spine events, so the file can be
deleted at any time and nothing is lost. For each spine the index keeps
the seq, hash, size and mtime it has seen (table ``spines``); ``reconcile``
compares them with a ``stat`` of each spine — no spine is opened unless it
moved — and rebuilds the heinzels that differ. A rebuild is written only
while holding that spine's lock, so it can never race its writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import is_not, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
import orjson

from hz_kernel.errors import HzError
from hz_kernel.store import positions
from hz_kernel.store.fsutil import FILE_MODE, file_kind, store_error

if TYPE_CHECKING:
    from hz_kernel.store.projection import Projection
    from hz_kernel.store.rebuild import Folded

#: 2: the feed's durable positions (tables ``feed`` and ``meta``, ``hz_kernel.store.positions``).
#: 3: a turn's start clears the heinzel's last outcome (rows folded before it showed a running
#: turn with the previous turn's disposition and report).
#: 4: a line whose types do not fit its kind is damage (``verify`` trusts a sound row to say so);
#: an older index may have folded such a line as sound.
#: 5: feed positions name their spine by a number (table ``feed_spine``), not by its id.
#: 7: a turn skipped ``held-by`` names the home that holds the lease (``turns.holder``).
#: 8: a skipped turn sets the heinzel's ``last_cause`` (an older index left the one before).
#: 9: the heinzels' ``rendered_version``, so the idle tick reads no turns.
#: 10: today's costs by heinzel read from their index alone (``costs_by_day`` holds the heinzel
#: and the amount), and notices found by key (``notices_by_key``): the listing and the tick.
#: 11: the heinzels' ``expiring`` and ``hinted``, so the idle tick reads no contract.
SCHEMA_VERSION = 11


#: Which of a table's columns a row fills (True) and which it leaves NULL (False).
Filled = tuple[bool, ...]
_NOTHING = repeat(None)


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    json: frozenset[str] = frozenset()
    store: str = ""
    json_at: tuple[int, ...] = field(init=False)
    """Where the JSON columns are among ``columns``."""
    upsert_sql: str = field(init=False)
    """The upsert statement, made once: every append's index write runs it."""
    _inserts: dict[Filled, str] = field(init=False, default_factory=dict, compare=False)
    """``insert_sql`` by the columns filled, made on first use."""

    def __post_init__(self) -> None:
        at = tuple(i for i, column in enumerate(self.columns) if column in self.json)
        object.__setattr__(self, "json_at", at)
        marks = ", ".join("?" for _ in self.columns)
        rest = [c for c in self.columns if c not in self.key]
        update = ", ".join(f"{c} = excluded.{c}" for c in rest)
        upsert = (
            f"INSERT INTO {self.name} ({', '.join(self.columns)}) VALUES ({marks}) "
            f"ON CONFLICT ({', '.join(self.key)}) DO "
            + (f"UPDATE SET {update}" if rest else "NOTHING")
        )
        object.__setattr__(self, "upsert_sql", upsert)

    def create_sql(self) -> str:
        cols = ", ".join(self.columns)
        return (
            f"CREATE TABLE IF NOT EXISTS {self.name} ({cols}, PRIMARY KEY ({', '.join(self.key)}))"
        )

    def values(self, row: dict[str, Any]) -> list[Any]:
        values = list(map(row.get, self.columns))
        for at in self.json_at:
            values[at] = orjson.dumps(values[at]).decode()
        return values

    def sparse(self, row: dict[str, Any]) -> tuple[Filled, tuple[Any, ...]]:
        """Which columns of ``row`` hold a value, and those values: what a rebuild inserts.

        Python's ``sqlite3`` binds ``None`` through its adapter lookup, several
        times the cost of any other value, and most columns of a history's rows
        are NULL. A rebuild's insert names only the columns filled, so the
        others take their default, NULL, without being bound.
        """
        values = self.values(row)
        filled = tuple(map(is_not, values, _NOTHING))
        return filled, tuple(compress(values, filled))

    def insert_sql(self, filled: Filled) -> str:
        """The statement that inserts a row filling the columns ``filled`` names, replacing
        any row of its key whole (as delete and insert: the columns not named are NULL)."""
        sql = self._inserts.get(filled)
        if sql is None:
            names = list(compress(self.columns, filled))
            marks = ", ".join("?" for _ in names)
            sql = f"INSERT OR REPLACE INTO {self.name} ({', '.join(names)}) VALUES ({marks})"
            self._inserts[filled] = sql
        return sql


HEINZELS = Table(
    "heinzels",
    (
        "id",
        "name",
        "namespace",
        "state",
        "contract_name",
        "contract_version",
        "contract_fingerprint",
        "proposed_version",
        "assets",
        "schedule",
        "render_on_schedule",
        "inputs",
        "hz",
        "aliases",
        "created_at",
        "paused",
        "retired",
        "damaged",
        "awake_turn",
        "waiting_turn",
        "waiting_until",
        "waiting_on",
        "last_turn",
        "last_cause",
        "last_disposition",
        "last_report",
        "last_turn_at",
        "pending_draft",
        "pending_amendment",
        "pending_question",
        "lessons_active",
        "lessons_seq",
        "turns_count",
        "next_due",
        "last_slot",
        "approved_at",
        "rendered_version",
        "expiring",
        "hinted",
        "last_summary_seq",
        "events_since_summary",
        "seq",
        "last_hash",
    ),
    ("id",),
    frozenset({"assets", "inputs", "hz", "aliases", "waiting_on"}),
)
TURNS = Table(
    "turns",
    (
        "heinzel",
        "turn",
        "seq",
        "started_at",
        "cause",
        "causes",
        "keys",
        "contract_version",
        "lessons_seq",
        "status",
        "step",
        "attempt",
        "disposition",
        "reason",
        "holder",
        "report",
        "usd",
        "tokens",
        "tokens_cached",
        "duration_ms",
        "finished_at",
        "waiting_until",
        "waiting_on",
        "parent_turn",
        "from_step",
        "resumes",
        "body_hash",
        "body_size",
        "request_ids",
    ),
    ("heinzel", "turn"),
    frozenset({"causes", "keys", "waiting_on", "request_ids"}),
    "turns",
)
DRAFTS = Table(
    "drafts",
    (
        "heinzel",
        "key",
        "seq",
        "turn",
        "asset",
        "output",
        "contract_version",
        "placed_at",
        "hash",
        "size",
        "status",
        "approver",
        "share_changed",
        "output_fp",
        "decided_at",
    ),
    ("heinzel", "key"),
    store="drafts",
)
LESSONS = Table(
    "lessons",
    ("heinzel", "lesson_id", "seq", "lesson", "from_key", "recorded_at", "dismissed"),
    ("heinzel", "lesson_id"),
    store="lessons",
)
AMENDMENTS = Table(
    "amendments",
    (
        "heinzel",
        "proposal",
        "seq",
        "by",
        "fingerprint",
        "widens",
        "reason",
        "status",
        "proposed_at",
        "version",
        "turn",
    ),
    ("heinzel", "proposal"),
    frozenset({"widens"}),
    store="amendments",
)
QUESTIONS = Table(
    "questions",
    ("heinzel", "key", "seq", "turn", "question", "asked_at", "status", "answered_at"),
    ("heinzel", "key"),
    store="questions",
)
KEYS = Table("keys", ("heinzel", "key", "turn", "status"), ("heinzel", "key"), store="keys")
REQUESTS = Table(
    "requests",
    ("heinzel", "request_id", "seq", "status", "turn", "cause", "key"),
    ("heinzel", "request_id"),
    store="requests",
)
COSTS = Table(
    "costs", ("heinzel", "day", "cause", "usd"), ("heinzel", "day", "cause"), store="costs"
)
NOTICES = Table(
    "notices", ("heinzel", "key", "seq", "notice", "ts"), ("heinzel", "key"), store="notices"
)
SPINES = Table("spines", ("heinzel", "seq", "hash", "size", "mtime_ns"), ("heinzel",))

CHILD_TABLES = (TURNS, DRAFTS, LESSONS, AMENDMENTS, QUESTIONS, KEYS, REQUESTS, COSTS, NOTICES)
ALL_TABLES = (HEINZELS, *CHILD_TABLES, SPINES)
_BY_NAME = {t.name: t for t in ALL_TABLES}

#: The secondary indexes, by name. A rebuild of the whole home drops them and creates them
#: after its rows are in: one sorted build each, not an update per inserted row.
_EXTRA_INDEXES = {
    "turns_by_status": "turns (status, heinzel)",
    "drafts_by_status": "drafts (status)",
    "costs_by_day": "costs (day, heinzel, usd)",
    "notices_by_key": "notices (key)",
    "heinzels_by_name": "heinzels (name)",
    "heinzels_by_state": "heinzels (state)",
}
_EXTRA_DDL = tuple(f"CREATE INDEX IF NOT EXISTS {n} ON {on}" for n, on in _EXTRA_INDEXES.items())

#: The page cache (KiB) of a rebuild's transaction. SQLite's default 2 MB spills the pages of
#: a rebuilt home to the WAL while inserting and reads them back to checkpoint; a cache as big
#: as the rows keeps each page written once. 64 MB holds the 20 MB index of 500 heinzels ×
#: 200 events three times over (a bigger home spills past it, as every home did before). Only
#: a rebuild holds it: the cache is memory the writer would otherwise keep for as long as it runs.
REBUILD_CACHE_KIB = 64 * 1024


#: What the index keeps per spine: (seq, size, mtime_ns, hash of the line at that seq).
SpineMark = tuple[int, int | None, int | None, str | None]


@dataclass(frozen=True, slots=True)
class SpineStat:
    size: int
    mtime_ns: int


def stat_spine(path: str | os.PathLike[str]) -> SpineStat | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return SpineStat(st.st_size, st.st_mtime_ns)


def _spine_row(
    heinzel_id: str, seq: int, last_hash: str | None, st: SpineStat | None
) -> tuple[str, int, str | None, int | None, int | None]:
    """The ``spines`` row: the seq and hash of the last line seen, and the stat it had."""
    return (heinzel_id, seq, last_hash, st.size if st else None, st.mtime_ns if st else None)


def _decode_row(table: Table, row: aiosqlite.Row) -> dict[str, Any]:
    out = dict(row)
    for column in table.json:
        if column in out and isinstance(out[column], str):
            out[column] = orjson.loads(out[column])
    return out


_INDEX_FILES = ("", "-wal", "-shm")
#: The first bytes of every SQLite database file.
_SQLITE_MAGIC = b"SQLite format 3\x00"


class IndexDamaged(HzError):
    """The index file is not a usable database (malformed page, not SQLite): rebuild it."""

    def __init__(self, path: Path, exc: sqlite3.Error) -> None:
        super().__init__(
            "HZS094",
            f"the index is damaged ({exc}); hz heinzel reindex rebuilds it from the spines",
            str(path),
        )


def index_error(exc: sqlite3.Error, path: Path) -> HzError:
    """The coded error for a failed index operation, by SQLite's own error name.

    A full disk or a read-only home is said as such (HZS091, HZS092), never
    mistaken for a damaged index; only SQLite's "corrupt" and "not a
    database" mean the file itself is bad (HZS094). SQLite reports a write
    that found no space in its shared-memory file as a mere "disk I/O
    error", so the file system is asked what is wrong.
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return IndexDamaged(path, exc)
    cause = _file_system_trouble(path.parent)
    if name.startswith("SQLITE_FULL"):
        cause = errno.ENOSPC
    if cause is not None and name.startswith(
        ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")
    ):
        return store_error(OSError(cause, str(exc)), path)
    if name.startswith(("SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH")):
        return store_error(OSError(errno.EACCES, str(exc)), path)
    if name.startswith("SQLITE_IOERR"):
        return HzError("HZS093", f"input/output error on the index ({exc})", str(path))
    return HzError("HZS070", f"cannot use the index ({exc})", str(path))


#: Less free space than this on the index's file system counts as a full disk.
_NEARLY_FULL = 256 * 1024


def _file_system_trouble(directory: Path) -> int | None:
    """ENOSPC or EROFS when the file system holding ``directory`` is full or read-only."""
    try:
        vfs = os.statvfs(directory)
    except OSError:
        return None
    if vfs.f_flag & os.ST_RDONLY:
        return errno.EROFS
    if vfs.f_bavail * vfs.f_frsize < _NEARLY_FULL:
        return errno.ENOSPC
    return None


def check_index_files(path: Path) -> None:
    """Refuse an index (or its WAL files) that is a directory, FIFO, socket, device or link.

    SQLite would follow a link and block on a FIFO; hz never opens either.
    """
    for suffix in _INDEX_FILES:
        candidate = path.with_name(path.name + suffix)
        try:
            mode = os.lstat(candidate).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise HzError(
                "HZS090",
                f"the index is a {file_kind(mode)}, not a regular file; move it away and hz "
                "rebuilds it from the spines",
                str(candidate),
            )


class IndexQueries:
    """The read side of the index: what a listing, a page or a tick asks of it.

    Shared by the kernel's ``Index`` and by ``IndexReader``, a read-only
    handle for a head that lists before its kernel has loaded.
    """

    conn: aiosqlite.Connection
    queries: int
    path: Path
    damage_seen = False
    """Set when a query found the file damaged (HZS094): a kernel that ticks rebuilds it."""

    def _failed(self, exc: sqlite3.Error) -> HzError:
        error = index_error(exc, self.path)
        if isinstance(error, IndexDamaged):
            self.damage_seen = True
        return error

    async def is_current(self, spines: Mapping[str, str | os.PathLike[str]]) -> bool:
        """True when the index has seen every spine as it is now (size and mtime) and no other."""
        return not stale_spines(await self.spine_marks(), spines)[0]

    async def fetch(self, table: str, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        self.queries += 1
        rows = await self._rows(sql, params)
        shape = _BY_NAME.get(table)
        if shape is None:
            return [dict(r) for r in rows]
        return [_decode_row(shape, r) for r in rows]

    async def _rows(self, sql: str, params: Sequence[Any]) -> Iterable[sqlite3.Row]:
        """Run one statement to its end in a single hop to the connection's thread.

        Shielded: a caller cancelled while its statement runs (a cockpit dropping a stale
        read) must not leave that statement open, or this connection keeps reading the
        snapshot it started on and never sees a later write.
        """
        try:
            return await asyncio.shield(self.conn.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    async def spine_marks(self) -> dict[str, SpineMark]:
        rows = await self.fetch("", "SELECT heinzel, seq, size, mtime_ns, hash FROM spines")
        return {r["heinzel"]: (r["seq"], r["size"], r["mtime_ns"], r["hash"]) for r in rows}

    async def list_heinzels(
        self,
        *,
        day: str,
        state: str | None = None,
        artifact: str | None = None,
        contract: str | None = None,
        contract_version: int | None = None,
        where: dict[str, str] | None = None,
        name: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Whole heinzel rows with today's cost (``cost_today``), sorted by name then id."""
        clauses, params = _heinzel_filter(
            state, artifact, contract, contract_version, where, name, ids
        )
        sql = (
            "SELECT h.*, COALESCE(c.usd, 0.0) AS cost_today FROM heinzels h "
            "LEFT JOIN (SELECT heinzel, SUM(usd) AS usd FROM costs WHERE day = ? "
            f"GROUP BY heinzel) c ON c.heinzel = h.id{clauses} ORDER BY h.name, h.id"
        )
        return await self.fetch("heinzels", sql, [day, *params])

    async def summary_rows(
        self,
        fields: Sequence[str],
        *,
        day: str,
        others: Mapping[str, Any] | None = None,
        state: str | None = None,
        artifact: str | None = None,
        contract: str | None = None,
        contract_version: int | None = None,
        where: dict[str, str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """``list_heinzels`` narrowed to ``fields`` (a listing): the same rows, built for speed.

        SQLite builds the rows as one JSON array of arrays, one string to hand
        over and one ``orjson`` call instead of a Python object per column
        (arrays, as naming every column in every row costs SQLite more than
        the whole scan). A field that is no column comes with its value in
        ``others`` and the flags come as booleans, so each row is one dict in
        ``fields``' order, ready to be a model's fields as they are. Today's
        costs come in the same statement as rows of their own, as numbers:
        SQLite's JSON would round a REAL to 15 digits (``cost_today``, when a
        field), summed from ``costs_by_day`` alone. The rows are read in the
        table's order, which costs SQLite a look-up per row less than name
        order through ``heinzels_by_name``, and sorted by name and id here.
        """
        clauses, params = _heinzel_filter(
            state, artifact, contract, contract_version, where, None, ids
        )
        others = others or {}
        columns = ", ".join(f for f in fields if f not in others)
        listed = ", ".join(_listed(f, others) for f in fields)
        sql = (
            f"SELECT 'rows', json_group_array(json_array({listed})) "
            f"FROM (SELECT {columns} FROM heinzels h{clauses}) h "
            "UNION ALL SELECT heinzel, COALESCE(SUM(usd), 0.0) FROM costs WHERE day = ? "
            "GROUP BY heinzel"
        )
        values: list[list[Any]] = []
        costs: dict[str, float] = {}
        self.queries += 1
        for heinzel_id, value in await self._rows(sql, [*params, day]):
            if heinzel_id == "rows":
                values = orjson.loads(value)
            else:
                costs[heinzel_id] = float(value)
        # Each array is the statement's ``json_array`` of exactly ``fields``: zip unchecked.
        rows = [dict(zip(fields, row)) for row in values]  # noqa: B905
        rows.sort(key=_BY_NAME_AND_ID)
        if costs and "cost_today" in fields:
            for row in rows:
                row["cost_today"] = costs.get(row["id"], 0.0)
        return rows

    async def heinzel(self, ref: str) -> dict[str, Any] | None:
        rows = await self.fetch(
            "heinzels", "SELECT * FROM heinzels WHERE id = ? OR name = ? ORDER BY id", (ref, ref)
        )
        return rows[0] if rows else None

    async def names(self) -> list[str]:
        """Every heinzel's name: what a mistyped one is compared with."""
        rows = await self.fetch("heinzels", "SELECT name FROM heinzels WHERE name IS NOT NULL")
        return [row["name"] for row in rows]

    async def rows_of(
        self, table: str, heinzel_id: str, order: str = "seq"
    ) -> list[dict[str, Any]]:
        return await self.fetch(
            table, f"SELECT * FROM {table} WHERE heinzel = ? ORDER BY {order}", (heinzel_id,)
        )


def _heinzel_filter(
    state: str | None,
    artifact: str | None,
    contract: str | None,
    contract_version: int | None,
    where: dict[str, str] | None,
    name: str | None,
    ids: Sequence[str] | None,
) -> tuple[str, list[Any]]:
    """The WHERE clause (with its leading space, or empty) and its parameters of a listing."""
    clauses: list[str] = []
    params: list[Any] = []
    if ids is not None:
        clauses.append(f"h.id IN ({', '.join('?' * len(ids))})" if ids else "0")
        params.extend(ids)
    if state:
        clauses.append("h.state = ?")
        params.append(state)
    if artifact:
        clauses.append("EXISTS (SELECT 1 FROM json_each(h.assets) WHERE value = ?)")
        params.append(artifact)
    if contract:
        clauses.append("h.contract_name = ?")
        params.append(contract)
    if contract_version is not None:
        clauses.append("h.contract_version = ?")
        params.append(contract_version)
    if name:
        clauses.append("h.name = ?")
        params.append(name)
    for key, value in (where or {}).items():
        clauses.append("CAST(json_extract(h.hz, ?) AS TEXT) = ?")
        params.extend([f"$.{key}", value])
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


#: SQLite's ``ORDER BY name, id`` (UTF-8 bytes sort as their code points do).
_BY_NAME_AND_ID = itemgetter("name", "id")

#: The heinzels' flags, listed as JSON booleans.
_FLAGS = frozenset({"paused", "retired", "damaged"})


def _listed(field: str, others: Mapping[str, Any]) -> str:
    """How ``summary_rows`` lists one field: a column as the API types it, else its value."""
    if field in others:
        return "json('" + orjson.dumps(others[field]).decode().replace("'", "''") + "')"
    if field in _FLAGS:
        return f"json(CASE WHEN h.{field} THEN 'true' ELSE 'false' END)"
    if field in HEINZELS.json:
        return f"json(h.{field})"
    return f"h.{field}"


def stale_spines(
    marks: dict[str, SpineMark], spines: Mapping[str, str | os.PathLike[str]]
) -> tuple[list[str], dict[str, SpineStat | None]]:
    """Heinzels whose spine differs from the index's mark (or has none), and every stat taken.

    One ``stat`` per spine; removed spines are the marks not in ``spines``
    and count as stale too (their rows must go).
    """
    stale: list[str] = [heinzel_id for heinzel_id in marks if heinzel_id not in spines]
    stats: dict[str, SpineStat | None] = {}
    for heinzel_id, path in spines.items():
        st = stats[heinzel_id] = stat_spine(path)
        mark = marks.get(heinzel_id)
        if mark is None or st is None or (mark[1], mark[2]) != (st.size, st.mtime_ns):
            stale.append(heinzel_id)
    return stale, stats


class IndexReader(IndexQueries):
    """A read-only connection to ``index.sqlite``, for listing without opening the kernel."""

    def __init__(self, path: Path, conn: aiosqlite.Connection) -> None:
        self.path = path
        self.conn = conn
        self.queries = 0

    @classmethod
    async def open(cls, path: Path) -> IndexReader | None:
        """The reader; None when there is no usable index of this schema (the kernel builds it)."""
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return None
        except OSError:
            return None
        try:
            conn = await _connected(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error:
            return None
        conn.row_factory = aiosqlite.Row
        try:
            await conn.execute("PRAGMA busy_timeout=5000")
            async with conn.execute("PRAGMA user_version") as cur:
                (version,) = await cur.fetchone() or (None,)
        except sqlite3.Error:
            version = None
        except BaseException:
            await conn.close()
            raise
        if version != SCHEMA_VERSION:
            await conn.close()
            return None
        return cls(path, conn)

    async def close(self) -> None:
        await self.conn.close()


async def _connected(database: str | Path, *, uri: bool = False) -> aiosqlite.Connection:
    """An aiosqlite connection that, cancelled while it opens (Ctrl-C), is closed first.

    aiosqlite only queues its thread's stop when its connect is cancelled: the thread
    then hands its answers to a loop ``asyncio.run`` has closed meanwhile, and prints
    "Event loop is closed" tracebacks. Here the cancelled open is waited for and closed.
    """
    opening = asyncio.ensure_future(aiosqlite.connect(database, uri=uri, isolation_level=None))
    try:
        return await asyncio.shield(opening)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await (await opening).close()
        raise


def remove_index_files(path: Path) -> None:
    """Delete a damaged index and its WAL files: it is derived, the spines rebuild it."""
    for suffix in _INDEX_FILES:
        candidate = path.with_name(path.name + suffix)
        try:
            if stat.S_ISREG(os.lstat(candidate).st_mode):
                candidate.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise store_error(exc, candidate) from None


class Index(IndexQueries):
    """The async handle on ``index.sqlite``. Counts its queries so tests can prove a cost."""

    def __init__(
        self, path: Path, conn: aiosqlite.Connection, writer: sqlite3.Connection, head: int
    ) -> None:
        self.path = path
        self.conn = conn
        self.writer = writer
        self.head = head
        """A descriptor of the file the connections opened, held until they close: the tick
        reads the file's first bytes through it (``overwritten``). Closing any descriptor of
        the file would drop every POSIX lock SQLite holds on it in this process, so the next
        connection elsewhere to close believes itself the last, checkpoints and deletes the
        WAL under this one, and this kernel's later commits reach no other process."""
        self.queries = 0
        self.recreated = False
        self.generation = ""
        """Which numbering the feed positions of this index belong to (``positions``)."""

    @classmethod
    async def open(cls, path: Path) -> Index:
        """Open the index, creating it; a damaged file is replaced by an empty one.

        The caller (the kernel) then rebuilds the rows from the spines, as it
        does for any spine the index has not seen. ``recreated`` says so.
        """
        check_index_files(path)
        try:
            return await cls._connect(path)
        except IndexDamaged:
            remove_index_files(path)
            index = await cls._connect(path)
            index.recreated = True
            return index

    @classmethod
    async def _connect(cls, path: Path) -> Index:
        if not path.exists():
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))
            except OSError as exc:
                raise store_error(exc, path) from None
        try:
            conn = await _connected(path)
        except sqlite3.Error as exc:
            raise index_error(exc, path) from None
        conn.row_factory = aiosqlite.Row
        try:
            writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            await conn.close()
            raise index_error(exc, path) from None
        try:
            head = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            await conn.close()
            writer.close()
            raise store_error(exc, path) from None
        index = cls(path, conn, writer, head)
        try:
            await index._prepare()
        except BaseException as exc:
            await index.close()
            if isinstance(exc, sqlite3.Error):
                raise index_error(exc, path) from None
            raise
        return index

    async def recreate(self) -> None:
        """Replace the index file by an empty one in place (``hz heinzel reindex`` on damage)."""
        await self.close()
        remove_index_files(self.path)
        await self._reconnect()
        self.recreated = True

    async def reconnect(self) -> None:
        """Open the file now at the index's path, leaving it as it is: the one this index had
        open was removed or replaced, so what it committed reached no other process."""
        await self.close()
        await self._reconnect()

    async def _reconnect(self) -> None:
        fresh = await Index._connect(self.path)
        self.conn, self.writer, self.head = fresh.conn, fresh.writer, fresh.head
        self.generation = fresh.generation
        self.damage_seen = False

    def replaced(self) -> bool:
        """Whether the path no longer names the file this index has open (removed, or another
        file put in its place), so no other process reads what this one commits."""
        try:
            return self._other_file(os.lstat(self.path))
        except OSError:
            return True

    def _other_file(self, now: os.stat_result) -> bool:
        """Whether ``now`` (the path's stat) is another file than the one held open."""
        try:
            held = os.fstat(self.head)
        except OSError:
            return True
        return (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino)

    def overwritten(self) -> bool:
        """Whether the file on disk no longer begins as an SQLite database, or is not the one
        this index has open.

        A tick asks this instead of trusting its queries: they are answered
        from pages this kernel has cached, so noise written over the file (or
        the file removed or replaced) under a running daemon would pass unseen
        until a query happened to read a page it had not cached. An empty
        file is a database not written yet. Something at the path that is no
        regular file is left to the next command, which names it (HZS090).
        """
        try:
            now = os.lstat(self.path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not stat.S_ISREG(now.st_mode):
            return False
        if self._other_file(now):
            return True
        try:
            head = os.pread(self.head, len(_SQLITE_MAGIC), 0)
        except OSError:
            return False
        return bool(head) and head != _SQLITE_MAGIC

    def sound(self) -> bool:
        """Whether the file on disk is a whole database, asked through a new connection.

        This kernel's own connections may not notice: a page one of them has
        cached is never read again while no other connection commits, so an
        index overwritten under a running daemon can pass every query of its
        writer while a fresh reader (and the next checkpoint) meets garbage.
        ``quick_check`` reads every page once; a reindex reads every spine.
        A file that no longer begins as a database is not whole either, even
        when the pages it lost are still in the WAL (which hides them from
        every connection): else each tick would find it so and rebuild again.
        """
        if self.overwritten():
            return False
        try:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        except sqlite3.Error:
            return False
        try:
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
        except sqlite3.DatabaseError:
            return False
        finally:
            conn.close()
        return rows == [("ok",)]

    async def _prepare(self) -> None:
        w = self.writer
        w.execute("PRAGMA journal_mode=WAL")
        w.execute("PRAGMA synchronous=NORMAL")
        # A rebuild stages and sorts a home's feed positions in temporary tables: in memory,
        # never in a file outside the home.
        w.execute("PRAGMA temp_store=MEMORY")
        w.execute("PRAGMA busy_timeout=5000")
        await self.conn.execute("PRAGMA busy_timeout=5000")
        (version,) = w.execute("PRAGMA user_version").fetchone()
        if version != SCHEMA_VERSION:
            for name in (*(t.name for t in ALL_TABLES), *positions.TABLES):
                w.execute(f"DROP TABLE IF EXISTS {name}")
        for table in ALL_TABLES:
            w.execute(table.create_sql())
        for ddl in _EXTRA_DDL:
            w.execute(ddl)
        self.generation = positions.prepare(w)
        w.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    async def close(self) -> None:
        """Close the connections, then the descriptor (once no lock of theirs is left to drop)."""
        try:
            await self.conn.close()
            self.writer.close()
        finally:
            head, self.head = self.head, -1
            if head >= 0:
                os.close(head)

    @contextlib.contextmanager
    def _roomy_cache(self) -> Iterator[None]:
        """A rebuild-sized page cache for the writer while the block runs (its commit included:
        the cache shrinks back only once its pages are written)."""
        w = self.writer
        try:
            (kept,) = w.execute("PRAGMA cache_size").fetchone()
            w.execute(f"PRAGMA cache_size=-{REBUILD_CACHE_KIB}")
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                w.execute(f"PRAGMA cache_size={int(kept)}")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; a failure rolls back and becomes a coded error."""
        w = self.writer
        try:
            w.execute("BEGIN")
            try:
                yield w
                w.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    w.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def _one(self, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
        try:
            row: tuple[Any, ...] | None = self.writer.execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return row

    # -- writing -----------------------------------------------------------------------

    async def write(
        self,
        projections: Sequence[Projection],
        stats: dict[str, SpineStat | None],
        *,
        full: bool,
        spines: Mapping[str, Sequence[positions.Placed]] | None = None,
    ) -> positions.Positions:
        """Store projections: ``full`` replaces each heinzel's rows, else upserts dirty rows.

        ``spines`` are the lines of those heinzels as their spines now hold
        them (events, or a rebuild's ``positions.Spot``): lines not positioned
        yet get their feed positions in the same commit, which are returned.
        Positions survive a reindex.
        """
        batches: dict[str, list[Sequence[Any]]] = {t.name: [] for t in ALL_TABLES}
        deletes: list[tuple[str]] = []
        for proj in projections:
            if full:
                deletes.append((proj.id,))
                batches["heinzels"].append(HEINZELS.values(proj.heinzel))
                for table in CHILD_TABLES:
                    store: dict[Any, dict[str, Any]] = getattr(proj, table.store)
                    batches[table.name].extend(table.values(r) for r in store.values())
            else:
                for table_name, pk in proj.dirty:
                    if table_name == "heinzel":
                        batches["heinzels"].append(HEINZELS.values(proj.heinzel))
                    else:
                        table = _BY_NAME[table_name]
                        row = getattr(proj, table.store).get(pk)
                        if row is not None:
                            batches[table.name].append(table.values(row))
            batches["spines"].append(
                _spine_row(
                    proj.id, proj.heinzel["seq"], proj.heinzel["last_hash"], stats.get(proj.id)
                )
            )
        roomy = self._roomy_cache() if full else contextlib.nullcontext()
        with roomy, self._transaction() as w:
            if deletes:
                for table in (HEINZELS, *CHILD_TABLES):
                    column = "id" if table is HEINZELS else "heinzel"
                    w.executemany(f"DELETE FROM {table.name} WHERE {column} = ?", deletes)
            for table in ALL_TABLES:
                if batches[table.name]:
                    w.executemany(table.upsert_sql, batches[table.name])
            assigned, renumbered = positions.assign(w, spines or {})
            generation = positions.new_generation(w) if renumbered else self.generation
        self.generation = generation
        for proj in projections:
            proj.dirty.clear()
        return assigned

    def rebuild(
        self,
        batches: Iterable[Sequence[Folded]],
        stats: dict[str, SpineStat | None],
        *,
        emptied: bool,
        keep_contradicted: bool,
    ) -> None:
        """Write a whole home's folded spines in one commit, each batch as it comes.

        The batches may still be folding in other processes: rows are
        written while the rest is read. ``emptied`` says no heinzel has
        rows to keep, so the tables are emptied at once; else each heinzel's
        rows are replaced as it comes, and with ``keep_contradicted`` a
        spine that contradicts the index's mark keeps its rows (the caller
        marks it damaged). Each batch's lines are staged for their feed
        positions as it comes, and positioned after the last batch as
        ``write`` positions them, each spine by its place in the rebuild's order.
        """
        kept: list[Folded] = []
        with self._roomy_cache(), self._transaction() as w:
            staging = positions.Staging(w)
            for name in _EXTRA_INDEXES:
                w.execute(f"DROP INDEX IF EXISTS {name}")
            if emptied:
                for table in ALL_TABLES:
                    w.execute(f"DELETE FROM {table.name}")
            for batch in batches:
                written = [f for f in batch if not (keep_contradicted and f.contradicts)]
                if not emptied:
                    ids = [(f.id,) for f in written]
                    for table in (HEINZELS, *CHILD_TABLES):
                        column = "id" if table is HEINZELS else "heinzel"
                        w.executemany(f"DELETE FROM {table.name} WHERE {column} = ?", ids)
                for table in (HEINZELS, *CHILD_TABLES):
                    grouped: dict[Filled, list[tuple[Any, ...]]] = {}
                    for f in written:
                        for filled, rows in f.rows[table.name].items():
                            grouped.setdefault(filled, []).extend(rows)
                    for filled, rows in grouped.items():
                        w.executemany(table.insert_sql(filled), rows)
                kept.extend(written)
                staging.add([(f.id, f.staged) for f in written])
            w.executemany(
                SPINES.upsert_sql,
                [_spine_row(f.id, f.seq, f.last_hash, stats.get(f.id)) for f in kept],
            )
            for ddl in _EXTRA_DDL:
                w.execute(ddl)
            renumbered = staging.assign()
            generation = positions.new_generation(w) if renumbered else self.generation
        self.generation = generation

    async def forget(self, heinzel_ids: Iterable[str]) -> None:
        ids = [(i,) for i in heinzel_ids]
        if not ids:
            return
        with self._transaction() as w:
            for table in ALL_TABLES:
                column = "id" if table is HEINZELS else "heinzel"
                w.executemany(f"DELETE FROM {table.name} WHERE {column} = ?", ids)
            positions.forget(w, ids)

    async def clear(self) -> None:
        with self._transaction() as w:
            for table in ALL_TABLES:
                w.execute(f"DELETE FROM {table.name}")

    async def mark_damaged(self, heinzel_id: str, st: SpineStat | None) -> None:
        """Flag a heinzel damaged and note the spine's stat, keeping the seq and hash last seen.

        The kept seq and hash are what the next look at the spine compares
        with, so the damage stays visible until the user accepts it.
        """
        with self._transaction() as w:
            w.execute("UPDATE heinzels SET damaged = 1 WHERE id = ?", (heinzel_id,))
            w.execute(
                "UPDATE spines SET size = ?, mtime_ns = ? WHERE heinzel = ?",
                (st.size if st else None, st.mtime_ns if st else None, heinzel_id),
            )

    def seen(self, heinzel_id: str) -> tuple[int, str | None] | None:
        """The seq and hash the index has seen for a spine (the writer's own, cheap check)."""
        row = self._one("SELECT seq, hash FROM spines WHERE heinzel = ?", (heinzel_id,))
        return (int(row[0]), row[1]) if row else None

    def spent_on(self, day: str) -> float:
        """USD recorded on ``day`` across all heinzels (the writer's cap check, cheap)."""
        row = self._one("SELECT COALESCE(SUM(usd), 0) FROM costs WHERE day = ?", (day,))
        return float(row[0]) if row else 0.0

    def former_names(self) -> dict[str, str]:
        """Each name a heinzel had before a rename and that no heinzel has now: its id."""
        try:
            rows = self.writer.execute(
                "SELECT value, h.id FROM heinzels AS h, json_each(h.aliases) "
                "WHERE h.aliases IS NOT NULL AND value NOT IN (SELECT name FROM heinzels) "
                "ORDER BY h.id"
            ).fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        named: dict[str, str] = {}
        for name, heinzel_id in rows:
            named.setdefault(str(name), str(heinzel_id))
        return named

    async def set_damaged(self, heinzel_id: str, damaged: bool) -> None:
        with self._transaction() as w:
            w.execute("UPDATE heinzels SET damaged = ? WHERE id = ?", (int(damaged), heinzel_id))
