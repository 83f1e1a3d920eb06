"""Planning a tick: who is due, with which wakes, in which order, and what waits.

The planner is pure: it gets the index rows of one query, what the sources
gave (``Staged``), the keys already done and the clock, and says per heinzel
whether to run a turn, skip the wakes (one ``turn.skipped`` line), resume a
waiting turn, or defer to a later tick. The kernel carries the plan out.

Rules, in the order they apply:

* damaged, paused, retired and proposed heinzels are never due;
* a heinzel whose turn is awake elsewhere is deferred (``busy``); one whose
  turn was cut off by a crash is run, which resumes that turn first;
* a waiting turn whose condition holds is resumed, and nothing else runs for
  that heinzel in the same tick;
* wakes due together coalesce into one turn: the newest schedule slot, every
  input that moved, every approved output that went stale;
* a schedule slot of an ``if-moved`` contract with nothing moved is skipped
  (``nothing-moved``), unless no turn has yet run under the contract's
  current version (a new approved version renders once); if an input could
  not be fetched the slot waits;
* with the day's spending at the cap, turns are skipped (``cap``); a ``discovered``
  wake waits instead, as it comes once per source;
* a ``discovered`` wake has a turn of its own, when nothing else is due, one source a
  turn, none while an amendment of the heinzel waits for the user (``tick.discovery``);
* a heinzel whose work failed is left alone until its retry time
  (``backoff``, see ``hz_kernel.tick.failures``);
* a heinzel whose inbox holds a request no turn has taken (admitted while
  another process held its spine, or before a crash) runs a turn with no
  wake of its own, which delivers them, unless it ran anyway this tick;
* order is graph height (upstream first), then oldest due, then name; only
  ``max_wakes_per_tick`` turns run, the rest are deferred (``max-wakes``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from hz_kernel.adapters.sources.document import slugify
from hz_kernel.clock import stamp
from hz_kernel.contracts import duration_seconds
from hz_kernel.engine.wakes import Wake, created_key, schedule_key, source_key, stale_key
from hz_kernel.tick.fetching import Staged, Watch, input_shapes, split_asset
from hz_kernel.tick.report import DeferReason
from hz_kernel.tick.schedule import SlotClock, slot_time
from hz_kernel.vocabulary import SkipReason, WokenBy

Action = Literal["run", "skip", "resume", "defer"]


#: What most rows have of outputs that expire, shared (read only): an idle tick over hundreds
#: of heinzels makes no empty dicts for them.
_NOTHING: Mapping[str, Any] = MappingProxyType({})


@dataclass(slots=True)
class HeinzelRow:
    """What the tick needs of one heinzel's index row (decoded once, and kept by the kernel
    while its row stays the same: the tick never changes one)."""

    id: str
    name: str
    active: bool
    schedule: str | None
    render_on_schedule: str
    inputs_json: str
    assets_json: str
    last_slot: str | None
    approved_at: str | None
    awake_turn: str | None
    waiting_turn: str | None
    waiting_until: str | None
    waiting_on: dict[str, Any] | None
    waited_status: str | None
    pending_draft: str | None
    valid_for: Mapping[str, int] = field(default_factory=dict)
    approvals: Mapping[str, tuple[str | None, bool]] = field(default_factory=dict)
    contract_unrendered: bool = False
    """An ``if-moved`` heinzel whose current contract version no turn has rendered under yet."""
    never_ran: bool = False
    """No turn of it has started: its first one has the cause ``created``."""
    own_watches: list[Watch] | None = field(default=None, init=False, repr=False, compare=False)
    """Its watches when none reads another heinzel, made at its first tick and kept with
    the row (``watches_of``; shared: read only)."""

    @property
    def inputs(self) -> dict[str, dict[str, Any]]:
        """The watched inputs with their ``last_fp`` (shared between equal rows: read only)."""
        return _decoded(self.inputs_json)  # type: ignore[no-any-return]

    @property
    def assets(self) -> list[str]:
        return _decoded(self.assets_json)  # type: ignore[no-any-return]

    @classmethod
    def from_index(cls, row: list[Any]) -> HeinzelRow:
        """A row as the tick's query lists it: the first fields in their order, already
        decoded and defaulted by SQLite (see ``TICK_QUERY``), then what only some rows have."""
        outputs, approvals, contract_unrendered, never_ran = row[15:]
        return cls(
            *row[:15],
            _valid_for(_json(outputs)) if outputs else _NOTHING,
            _approvals(_json(approvals)) if approvals else _NOTHING,
            bool(contract_unrendered),
            bool(never_ran),
        )


def _json(value: Any) -> Any:
    """A JSON column arrives as text, or already decoded when SQLite built it as JSON."""
    return orjson.loads(value) if isinstance(value, str) else value


@lru_cache(maxsize=4096)
def _decoded(text: str) -> Any:
    return orjson.loads(text)


def _valid_for(outputs: dict[str, Any]) -> dict[str, int]:
    return {
        name: duration_seconds(spec["valid_for"])
        for name, spec in outputs.items()
        if isinstance(spec, dict) and spec.get("valid_for")
    }


def _approvals(approvals: dict[str, Any]) -> dict[str, tuple[str | None, bool]]:
    return {
        name: (pair[0], bool(pair[1]))
        for name, pair in approvals.items()
        if isinstance(pair, list) and len(pair) == 2
    }


class PlannedTurn(BaseModel):
    """The tick's decision for one heinzel."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    heinzel: str
    name: str
    action: Action
    wakes: list[Wake] = []
    height: int = 0
    due_at: datetime
    reason: SkipReason | DeferReason | None = None
    moved: list[str] = []
    waiting_turn: str | None = None
    woken_by: WokenBy | None = None
    holder: str | None = None
    """``held-by``: the roster handle of the home holding a team heinzel's lease."""


# -- the graph ----------------------------------------------------------------------------

_READS_OTHERS = frozenset({"heinzel", "document"})


def upstreams(
    rows: Iterable[HeinzelRow],
    resolve: Callable[[str], Path],
    former_names: Callable[[], Mapping[str, str]] = dict,
) -> dict[str, dict[str, str]]:
    """Per heinzel, per input: the heinzel whose output that input reads.

    An input reads another heinzel when it names it (source ``heinzel``) or
    when it is a ``document`` input on a file another heinzel publishes to
    (same file, and the same section unless the input takes the whole file).
    A name no heinzel has now is looked up among the names heinzels had
    before a rename (``former_names``, asked only then).
    """
    rows = list(rows)
    readers = [
        (row, name, spec)
        for row in rows
        if '"source":"heinzel"' in row.inputs_json or '"source":"document"' in row.inputs_json
        for name, spec in row.inputs.items()
        if spec.get("source") in _READS_OTHERS
    ]
    if not readers:
        return {}
    by_name = {r.name: r.id for r in rows}
    looked_up = False
    resolved = lru_cache(maxsize=None)(resolve)
    publishers: dict[Path, list[tuple[str, str | None]]] = {}
    for row in rows:
        for asset in row.assets:
            path, anchor = split_asset(asset)
            publishers.setdefault(resolved(path), []).append((row.id, anchor))
    found: dict[str, dict[str, str]] = {}
    for row, name, spec in readers:
        args = spec.get("args") or {}
        if spec.get("source") == "heinzel":
            named = str(args.get("heinzel"))
            if named not in by_name and not looked_up:
                by_name, looked_up = {**former_names(), **by_name}, True
            upstream = by_name.get(named)
        else:
            on_file = publishers.get(resolved(str(args.get("path"))), [])
            upstream = _publisher(on_file, args.get("anchor"), reader=row.id)
        if upstream is not None and upstream != row.id:
            found.setdefault(row.id, {})[name] = upstream
    return found


def _publisher(on_file: list[tuple[str, str | None]], anchor: Any, *, reader: str) -> str | None:
    """Who publishes the part of a file an input reads (any part when it reads the whole)."""
    wanted = slugify(str(anchor)) if anchor else None
    for publisher, published in on_file:
        if publisher != reader and (wanted is None or published in (None, wanted)):
            return publisher
    return None


def heights(ids: Iterable[str], reads: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """Topological height: 0 for a heinzel reading no other, else one above its highest upstream.

    A cycle (which the contracts should not form) is cut where it closes.
    """
    if not reads:
        return dict.fromkeys(ids, 0)
    memo: dict[str, int] = {}
    visiting: set[str] = set()

    def height(node: str) -> int:
        if node in memo:
            return memo[node]
        if node in visiting:
            return 0
        visiting.add(node)
        ups = set((reads.get(node) or {}).values())
        value = 1 + max((height(u) for u in ups), default=-1)
        visiting.discard(node)
        memo[node] = value
        return value

    return {node: height(node) for node in ids}


# -- watches ------------------------------------------------------------------------------


def watches_of(row: HeinzelRow, reads: Mapping[str, str]) -> list[Watch]:
    """The row's inputs as watches: made once per row while none reads another heinzel,
    as an idle tick would otherwise make the same hundreds of watches again."""
    if reads:
        return _watches(row, reads)
    if row.own_watches is None:
        row.own_watches = _watches(row, reads)
    return row.own_watches


def _watches(row: HeinzelRow, reads: Mapping[str, str]) -> list[Watch]:
    heinzel = row.id
    return [
        Watch(heinzel, name, request, key, facet, last_fp, recheck_s, reads.get(name))
        for name, request, key, facet, last_fp, recheck_s in input_shapes(row.inputs_json)
    ]


def watched(
    rows: Iterable[HeinzelRow], reads: Mapping[str, Mapping[str, str]], *, leave_out: set[str]
) -> dict[str, list[Watch]]:
    """The watches of every heinzel that may wake this tick.

    A ``document`` input on another heinzel's document is left out while
    that heinzel has a draft waiting: a reader wakes on approved text, never
    on a draft. A ``heinzel`` input needs no such care, as it reads only
    what was approved.
    """
    rows = list(rows)
    by_id = {r.id: r for r in rows}
    found: dict[str, list[Watch]] = {}
    for row in rows:
        if not row.active or row.id in leave_out or row.inputs_json == "{}":
            continue
        upstreams = reads.get(row.id)
        kept = watches_of(row, upstreams or {})
        if upstreams:
            kept = [
                w
                for w in kept
                if w.upstream is None
                or w.request.source == "heinzel"
                or not by_id[w.upstream].pending_draft
            ]
        if kept:
            found[row.id] = kept
    return found


# -- what is due --------------------------------------------------------------------------


def due_slot(row: HeinzelRow, clock: SlotClock, now: datetime) -> str | None:
    """The key of the newest slot at or before ``now`` that this heinzel has not covered yet.

    Keys and spine stamps are both UTC and fixed-width from the left, so
    plain string order is time order: a slot in the very minute of the
    approval sorts before the approval's stamp and is not owed.
    """
    if not row.schedule or not row.active:
        return None
    return _slot_owed(row, clock.latest_key(row.schedule, now))


def due_slots(rows: Iterable[HeinzelRow], clock: SlotClock, now: datetime) -> dict[str, str]:
    """``due_slot`` of every row that has one, asking the clock once per distinct schedule."""
    latest: dict[str, str | None] = {}
    found: dict[str, str] = {}
    for row in rows:
        if not row.schedule or not row.active:
            continue
        if row.schedule not in latest:
            latest[row.schedule] = clock.latest_key(row.schedule, now)
        if (slot := _slot_owed(row, latest[row.schedule])) is not None:
            found[row.id] = slot
    return found


def _slot_owed(row: HeinzelRow, key: str | None) -> str | None:
    """``key`` when that slot is newer than what the row has covered (see ``due_slot``)."""
    covered = row.last_slot or row.approved_at
    if key is None or covered is None:
        return None
    return key if key > covered else None


def source_moves(
    row: HeinzelRow, watches: Iterable[Watch], staged: Staged
) -> tuple[list[Wake], bool]:
    """Wakes for inputs whose fingerprint moved, and whether any input could not be read."""
    wakes: list[Wake] = []
    failed = False
    for watch in watches:
        if watch.key in staged.errors:
            failed = True
            continue
        fp = staged.move(watch.key, watch)
        if fp is None:
            continue
        wakes.append(
            Wake(
                cause="source-changed",
                key=source_key(row.id, watch.input, fp),
                input=watch.input,
                fingerprint=fp,
                due_at=staged.results[watch.key].as_of,
            )
        )
    return wakes, failed


def stale_wakes(row: HeinzelRow, now: datetime) -> list[Wake]:
    """Approved outputs whose ``valid_for`` ran out and that no newer draft is replacing."""
    wakes: list[Wake] = []
    for output, seconds in row.valid_for.items():
        approved_at, pending = row.approvals.get(output, (None, False))
        if approved_at is None or pending:
            continue
        valid_until = _parse(approved_at) + timedelta(seconds=seconds)
        if now >= valid_until:
            key = stale_key(row.id, output, stamp(valid_until))
            wakes.append(Wake(cause="stale", key=key, due_at=valid_until))
    return wakes


def waiting_resume(
    row: HeinzelRow, watches: Iterable[Watch], staged: Staged, now: datetime
) -> tuple[WokenBy, datetime] | None:
    """Why a waiting turn should resume now, if it should."""
    if not row.waiting_turn:
        return None
    if row.waiting_until and _parse(row.waiting_until) <= now:
        return "timer", _parse(row.waiting_until)
    on = row.waiting_on or {}
    kind = on.get("kind")
    if kind == "approval" and row.waited_status in ("approved", "rejected"):
        return "approval", now
    if kind == "answer" and row.waited_status == "answered":
        return "answer", now
    if kind == "source":
        for watch in (w for w in watches if w.input == on.get("input")):
            fp = staged.fingerprint(watch.key, watch.facet)
            if fp is not None and fp != on.get("fingerprint_not"):
                return "source", staged.results[watch.key].as_of
    return None


# -- planning -----------------------------------------------------------------------------


@dataclass
class TickInputs:
    """Everything the planner decides from (the slots and moves computed once per tick)."""

    now: datetime
    rows: list[HeinzelRow]
    watches: dict[str, list[Watch]]
    staged: Staged
    slots: dict[str, str]
    moves: dict[str, tuple[list[Wake], bool]]
    done_keys: set[tuple[str, str]]
    heights: dict[str, int]
    busy: set[str]
    capped: bool
    max_wakes: int
    backing_off: set[str] = field(default_factory=set)
    undelivered: set[str] = field(default_factory=set)
    """Heinzels whose inbox is marked as holding requests no turn has taken yet."""
    discovered: dict[str, list[Wake]] = field(default_factory=dict)
    """Per heinzel, the ``discovered`` wakes owed, oldest first (``tick.discovery``)."""

    def candidates(self) -> set[tuple[str, str]]:
        """Every (heinzel, key) this tick might wake with, before knowing which are done."""
        found = {(h, w.key) for h, (wakes, _) in self.moves.items() for w in wakes}
        for row in self.rows:
            if row.active and row.valid_for:
                found.update((row.id, w.key) for w in stale_wakes(row, self.now))
            if row.active and row.never_ran:
                found.add((row.id, created_key(row.id)))
        found.update((h, w.key) for h, wakes in self.discovered.items() for w in wakes)
        return found


def plan_heinzel(row: HeinzelRow, ctx: TickInputs) -> PlannedTurn | None:
    """The decision for one heinzel, before ordering and the per-tick limit."""
    if not row.active:
        return None
    if row.awake_turn and row.id in ctx.busy:
        return PlannedTurn(**_base(row, ctx), action="defer", reason="busy", due_at=ctx.now)
    if not (
        row.awake_turn
        or row.waiting_turn
        or row.valid_for
        or row.id in ctx.slots
        or row.id in ctx.moves
        or row.id in ctx.discovered
    ):
        return None  # asleep with nothing owed: most heinzels, on most ticks
    watches = ctx.watches.get(row.id, [])
    resume = None if row.awake_turn else waiting_resume(row, watches, ctx.staged, ctx.now)
    if resume is not None:
        woken_by, due_at = resume
        if ctx.capped:
            return PlannedTurn(**_base(row, ctx), action="defer", reason="cap", due_at=due_at)
        return PlannedTurn(
            **_base(row, ctx),
            action="resume",
            due_at=due_at,
            waiting_turn=row.waiting_turn,
            woken_by=woken_by,
        )
    wakes: list[Wake] = []
    slot = ctx.slots.get(row.id)
    if slot is not None:
        wakes.append(
            Wake(
                cause="schedule",
                key=schedule_key(row.id, slot),
                slot=slot,
                due_at=slot_time(slot),
            )
        )
    moved_wakes, failed = ctx.moves.get(row.id, ([], False))
    moved = [w for w in moved_wakes if (row.id, w.key) not in ctx.done_keys]
    wakes += moved
    if row.valid_for:
        wakes += [w for w in stale_wakes(row, ctx.now) if (row.id, w.key) not in ctx.done_keys]
    if not wakes:
        # A discovered source has a turn of its own, one at a time: its proposal never takes
        # the place of a slot's draft, and the user decides each.
        owed = ctx.discovered.get(row.id, ())
        wakes += [w for w in owed if (row.id, w.key) not in ctx.done_keys][:1]
    if wakes and row.never_ran and (row.id, created_key(row.id)) not in ctx.done_keys:
        # A heinzel's first turn says so (``created``) after what woke it, whose key stays
        # first (a draft's key names it); one with nothing to read yet still sleeps, as any
        # heinzel does when nothing moved.
        wakes.append(Wake(cause="created", key=created_key(row.id), due_at=ctx.now))
    if not wakes and not row.awake_turn:
        return None
    base = _base(row, ctx)
    due_at = min((w.due_at for w in wakes if w.due_at), default=ctx.now)
    moved_inputs = sorted({w.input for w in moved if w.input})
    only_schedule = all(w.cause == "schedule" for w in wakes)
    quiet = only_schedule and row.render_on_schedule == "if-moved" and not row.contract_unrendered
    if wakes and quiet and not row.awake_turn:
        if failed:
            return PlannedTurn(
                **base, action="defer", reason="source-failed", wakes=wakes, due_at=due_at
            )
        return PlannedTurn(
            **base, action="skip", reason="nothing-moved", wakes=wakes, due_at=due_at
        )
    if ctx.capped and wakes:
        return capped(
            PlannedTurn(**base, action="run", wakes=wakes, moved=moved_inputs, due_at=due_at)
        )
    return PlannedTurn(**base, action="run", wakes=wakes, moved=moved_inputs, due_at=due_at)


def capped(item: PlannedTurn) -> PlannedTurn:
    """The day's spending is at its cap: a turn is skipped, a resume waits, and so does a
    discovered source, which brings one wake ever (skipping it would lose it)."""
    kept = [w for w in item.wakes if w.cause != "discovered"]
    if item.action == "resume" or (item.wakes and not kept):
        return item.model_copy(update={"action": "defer", "reason": "cap"})
    return item.model_copy(update={"action": "skip", "reason": "cap", "wakes": kept})


def _base(row: HeinzelRow, ctx: TickInputs) -> dict[str, Any]:
    """What every decision on ``row`` says (built only once a row has one: most have none)."""
    return {"heinzel": row.id, "name": row.name, "height": ctx.heights.get(row.id, 0)}


def plan_delivery(row: HeinzelRow, ctx: TickInputs) -> PlannedTurn | None:
    """A turn with no wake of its own, for the requests waiting in a marked inbox.

    An inactive heinzel keeps its requests (and its mark) until it may run.
    """
    if not row.active:
        return None
    base = _base(row, ctx)
    if row.awake_turn and row.id in ctx.busy:
        return PlannedTurn(**base, action="defer", reason="busy", due_at=ctx.now)
    if ctx.capped:
        return PlannedTurn(**base, action="defer", reason="cap", due_at=ctx.now)
    return PlannedTurn(**base, action="run", due_at=ctx.now)


def plan_tick(ctx: TickInputs) -> list[PlannedTurn]:
    """Every decision of this tick, in the order they are carried out."""
    planned = [p for row in ctx.rows if (p := plan_heinzel(row, ctx)) is not None]
    if ctx.undelivered:
        running = {p.heinzel for p in planned if p.action == "run" or p.reason == "busy"}
        planned += [
            p
            for row in ctx.rows
            if row.id in ctx.undelivered
            and row.id not in running
            and (p := plan_delivery(row, ctx)) is not None
        ]
    planned = [
        p.model_copy(update={"action": "defer", "reason": "backoff"})
        if p.heinzel in ctx.backing_off and p.action != "defer"
        else p
        for p in planned
    ]
    planned.sort(key=lambda p: (p.height, p.due_at, p.name, p.heinzel))
    budget = ctx.max_wakes
    ordered: list[PlannedTurn] = []
    for item in planned:
        if item.action in ("run", "resume"):
            if budget <= 0:
                item = item.model_copy(update={"action": "defer", "reason": "max-wakes"})
            else:
                budget -= 1
        ordered.append(item)
    return ordered


def _parse(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
