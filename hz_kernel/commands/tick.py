"""The tick: one index query, the fetches that are due, then the turns that are owed.

``tick_once`` is what ``hz tick --once`` runs (from cron or a systemd
timer), and what the daemon and the embedded cockpit run every
``HZ_TICK_SECONDS`` through ``run_tick_loop``. An asleep heinzel costs the
tick a row of that one query and nothing else: no spine is opened unless a
turn is run or skipped for it.

Steps: read every row that could be due (with today's spending and whether
the user was told of the cap) → fetch each due input once and stage it in
the source cache → look up which candidate keys are already done (only when
something moved) → plan → carry the plan out through the turn engine.

One heinzel's failure is that heinzel's: whatever its work raises is
reported as a problem of this tick, recorded (``hz_kernel.tick.failures``)
and backed off from, and the tick goes on with the others. A tick that
fails as a whole is one coded error (``HZT121``); the loop goes on to the
next, and its ``TickPulse`` tells the daemon's health check when a tick
last ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from itertools import chain
from operator import attrgetter
from typing import Any, Protocol, runtime_checkable

import orjson

from hz_kernel import api, crashpoints
from hz_kernel.adapters.sources import default_registry
from hz_kernel.adapters.sources.base import as_utc
from hz_kernel.clock import now_utc, stamp
from hz_kernel.config import Settings
from hz_kernel.contracts import InputSpec
from hz_kernel.contracts.model import TEAM_HINT
from hz_kernel.core import KernelCore
from hz_kernel.engine.wakes import Wake, source_key
from hz_kernel.errors import HzError
from hz_kernel.flow import Need, flow_notices, needs_of
from hz_kernel.held import deliver_queued
from hz_kernel.store.inbox import remark_pending, undelivered
from hz_kernel.store.locks import FileLock, SpineBusy
from hz_kernel.store.pruning import DailyPrune
from hz_kernel.store.session import HeldSession
from hz_kernel.store.spine import LOCK_NAME
from hz_kernel.team.repo import TeamRepo
from hz_kernel.tick.cache import SourceCache
from hz_kernel.tick.discovery import (
    MAX_NEW_PER_DAY,
    DiscoveryState,
    KnownSources,
    discovered_key,
    discovery_path,
    folder_sources,
    input_identity,
    plainly_named,
    team_sources,
)
from hz_kernel.tick.failures import FailureLedger, failures_path
from hz_kernel.tick.fetching import (
    SourceFetcher,
    Staged,
    Watch,
    fetch_into,
    group_watches,
    input_shapes,
    is_due,
    stage,
)
from hz_kernel.tick.report import (
    TickDeferred,
    TickProblem,
    TickReport,
    TickSkipped,
    TickWoken,
)
from hz_kernel.tick.schedule import user_zone
from hz_kernel.tick.wakes import (
    HeinzelRow,
    PlannedTurn,
    TickInputs,
    capped,
    due_slots,
    heights,
    plan_tick,
    source_moves,
    upstreams,
    watched,
)
from hz_kernel.vocabulary import NoticeRaised, SkipReason, SourceDiscovered, WokenBy

#: An upstream by name, and when its newest waiting draft of one output was placed.
FLOW_WAITING_QUERY = """
SELECT h.id, h.name, (
    SELECT d.placed_at FROM drafts AS d
    WHERE d.heinzel = h.id AND d.output = ?1 AND d.status = 'pending'
    ORDER BY d.seq DESC LIMIT 1
) AS placed
FROM heinzels AS h
WHERE (h.name = ?2 OR EXISTS (SELECT 1 FROM json_each(h.aliases) WHERE value = ?2))
AND NOT h.retired ORDER BY h.name != ?2, h.id LIMIT 1
"""
FLOW_NOTICES_QUERY = "SELECT heinzel, key FROM notices WHERE key LIKE 'flow:%'"

#: A row's id, read in C: an idle tick reads hundreds.
_ID = attrgetter("id")

_ROW = """json_array(
    h.id, h.name, json(CASE WHEN h.paused OR h.retired OR h.damaged THEN 'false' ELSE 'true' END),
    h.schedule, COALESCE(NULLIF(h.render_on_schedule, ''), 'always'),
    COALESCE(NULLIF(h.inputs, ''), '{}'), COALESCE(NULLIF(h.assets, ''), '[]'),
    h.last_slot, h.approved_at, h.awake_turn, h.waiting_turn, h.waiting_until,
    CASE WHEN h.waiting_on <> '' THEN json(h.waiting_on) END,
    CASE WHEN h.waiting_turn IS NOT NULL THEN
      CASE json_extract(h.waiting_on, '$.kind')
        WHEN 'approval' THEN (SELECT status FROM drafts WHERE heinzel = h.id
                              AND key = json_extract(h.waiting_on, '$.key'))
        WHEN 'answer' THEN (SELECT status FROM questions WHERE heinzel = h.id
                            AND key = json_extract(h.waiting_on, '$.key'))
      END
    END,
    h.pending_draft,
    CASE WHEN h.expiring THEN json_extract(h.hz, '$.outputs') END,
    CASE WHEN h.expiring THEN (
      SELECT json_group_object(output, json_array(approved_at, pending)) FROM (
        SELECT output,
               MAX(CASE WHEN status = 'approved' THEN decided_at END) AS approved_at,
               MAX(status = 'pending') AS pending
        FROM drafts WHERE heinzel = h.id GROUP BY output))
    END,
    CASE WHEN h.render_on_schedule = 'if-moved' THEN
      h.contract_version > 0
      AND (h.rendered_version IS NULL OR h.rendered_version < h.contract_version)
    END,
    h.turns_count = 0)"""
"""One heinzel as the tick plans from it, already in ``HeinzelRow``'s shape. Whether a turn
ran under the current contract is the row's own ``rendered_version``; only a waiting turn's
row looks up what it waits on, and only a row with outputs that expire their approvals."""

TICK_QUERY = f"""
WITH t AS MATERIALIZED (
  SELECT h.rowid AS rid, h.id, COALESCE(NULLIF(h.inputs, ''), '{{}}') AS inputs,
    CASE WHEN h.paused OR h.retired OR h.damaged THEN 0 ELSE 1 END AS active,
    instr(h.inputs, '"source":"heinzel"') OR instr(h.inputs, '"source":"document"') AS reads,
    COALESCE(h.awake_turn IS NOT NULL OR h.waiting_turn IS NOT NULL
      OR h.pending_draft IS NOT NULL OR h.expiring
      OR instr(h.inputs, '"needed_by"')
      OR (COALESCE(h.schedule, '') <> ''
          AND COALESCE(json_extract(?3, '$.' || json_quote(h.schedule)), '~')
              > COALESCE(h.last_slot, h.approved_at)), 0) AS owes,
    h.namespace = 'team' AS team,
    h.hinted
  FROM heinzels AS h WHERE h.contract_version IS NOT NULL
),
flags AS (
  SELECT COALESCE(MAX(reads), 0) AS reads, COALESCE(MAX(team), 0) AS has_team,
         COALESCE(MAX(hinted), 0) AS has_hints FROM t
)
SELECT
(SELECT group_concat({_ROW}, char(10)) FROM heinzels AS h
 WHERE h.rowid IN (SELECT rid FROM t, flags WHERE t.owes OR flags.reads)) AS rows,
(SELECT json_group_object(inputs, ids) FROM (
   SELECT t.inputs, group_concat(t.id) AS ids FROM t, flags
   WHERE t.active AND NOT t.owes AND NOT flags.reads AND t.inputs <> '{{}}'
   GROUP BY t.inputs)) AS idle,
(SELECT json_group_array(id) FROM t WHERE id IN (SELECT value FROM json_each(?4))) AS known,
(SELECT COALESCE(SUM(usd), 0.0) FROM costs WHERE day = ?1) AS spent_today,
EXISTS (SELECT 1 FROM notices WHERE key = ?2) AS cap_noticed,
flags.has_team, flags.has_hints
FROM flags
"""
"""Everything a tick plans from, in one statement, one pass over the heinzels and one row.

SQLite decides which heinzels have nothing to do: active, not awake nor waiting, no draft
waiting, no output that expires, no ``needed_by``, no schedule slot owed (``?3``: the newest
slot key of every schedule the kernel knows; a schedule it does not know yet lists its
rows), and no input reading another heinzel in the home (then every row is listed, for the
graph). Those come only as their distinct ``inputs`` texts with their ids (``idle``): the
tick stages each text's watches once, and lists in full (``ROWS_BY_ID``) only the heinzels
of a text that moved. The others are listed in full (``rows``: one JSON array per heinzel,
joined by newlines; SQLite's JSON escapes every newline inside a value). Then which of the
failure ledger's heinzels (``?4``) still exist, today's spending, whether the user was told
of the cap today, whether any heinzel is in a team (only then does a tick run git) and
whether any has ``discover`` hints (only then does the daily discovery job look)."""

ROWS_BY_ID = f"""
SELECT group_concat({_ROW}, char(10)) AS rows FROM heinzels AS h
WHERE h.contract_version IS NOT NULL AND h.id IN (SELECT value FROM json_each(?))
"""
"""The full tick rows of these heinzels (as ``TICK_QUERY`` lists them)."""

DISCOVER_QUERY = """
SELECT id, name, namespace, hz FROM heinzels
WHERE contract_version IS NOT NULL
  AND NOT (COALESCE(paused, 0) OR COALESCE(retired, 0) OR COALESCE(damaged, 0))
  AND json_array_length(json_extract(hz, '$.discover')) > 0
ORDER BY name
"""
"""The heinzels the daily discovery job looks for sources for."""
AMENDING_QUERY = """
SELECT id FROM heinzels
WHERE pending_amendment IS NOT NULL AND id IN (SELECT value FROM json_each(?))
"""
"""Which of these heinzels has an amendment waiting for the user (its discovered wakes wait)."""

DONE_KEYS_QUERY = """
SELECT k.heinzel, k.key FROM json_each(?) AS j
JOIN keys AS k
  ON k.heinzel = json_extract(j.value, '$[0]') AND k.key = json_extract(j.value, '$[1]')
WHERE k.status IN ('finished', 'skipped')
"""


@runtime_checkable
class TurnEngine(Protocol):
    """What the tick needs of the turn engine (``TurnCommands``)."""

    async def run_wakes(self, heinzel_id: str, wakes: list[Wake]) -> str | None: ...

    async def skip_wakes(
        self,
        heinzel_id: str,
        wakes: list[Wake],
        *,
        reason: SkipReason,
        moved: list[str],
        holder: str | None = None,
    ) -> str | None: ...

    def running_turn(self, heinzel_id: str) -> str | None: ...


@runtime_checkable
class TeamWork(Protocol):
    """Team heinzels' leases before the turns and their receipts after (``TeamCommands``)."""

    async def team_before_turns(
        self, plan: list[PlannedTurn], now: datetime, ttl: timedelta
    ) -> tuple[list[PlannedTurn], list[TickProblem]]: ...

    async def team_after_turns(self, now: datetime) -> list[TickProblem]: ...


@runtime_checkable
class WaitingTurns(Protocol):
    """How the tick resumes a waiting turn whose condition holds."""

    async def resume_waiting(self, heinzel_id: str, turn: str, woken_by: WokenBy) -> None: ...


@runtime_checkable
class DraftWatcher(Protocol):
    """How the tick notices drafts the user approved or rejected by editing the document."""

    async def observe_drafts(self, pending: list[tuple[str, str]]) -> list[str]: ...


#: Codes that mean "another process is writing this spine": contention, not a failure.
BUSY_CODES = frozenset({"HZS010"})
_log = logging.getLogger("hz.tick")


@runtime_checkable
class Pruner(Protocol):
    """The store's prune (``StoreCommands``), which a tick loop runs once a day."""

    async def prune(self) -> object: ...


async def let_others_run() -> None:
    """One trip round the event loop between two heinzels' work.

    A heinzel's work in a tick (a spine read and written, a document read) is
    milliseconds that never wait on anything; over hundreds of heinzels it
    would hold the loop for seconds, and a daemon's requests (health, a
    listing, a stop) would wait for the whole tick.
    """
    await asyncio.sleep(0)


def cap_notice_key(day: str) -> str:
    return f"cap@{day}"


def tick_interval(settings: Settings) -> float:
    """Seconds between ticks: ``HZ_TICK_SECONDS`` when set, else ``[daemon] tick_seconds``."""
    raw = os.environ.get("HZ_TICK_SECONDS")
    if not raw:
        return settings.daemon.tick_seconds
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 86400:
        raise HzError("HZT104", "HZ_TICK_SECONDS must be a number of seconds up to 86400", raw)
    return seconds


class TickCommands(KernelCore):
    """``hz tick``: wake what is due, fetch what must be looked at, and nothing more."""

    spine_opens: int = 0
    """Sessions this kernel opened so far; a tick reports how many it caused."""
    pulse: TickPulse | None = None
    """The beat of the tick loop running on this kernel, if one does (``run_tick_loop``)."""
    has_team: bool = False
    """Whether the last tick's query found a team heinzel: a tick without one runs no git."""
    remarked: bool = False
    """Whether this kernel's ticks have marked every inbox holding a request (the first does)."""

    _fetcher: SourceFetcher
    _ledger: FailureLedger
    _tick_rows: dict[str, HeinzelRow]
    """The last tick's rows by their text in ``TICK_QUERY``'s answer (see ``_rows``)."""
    _tick_schedules: set[str]
    """Every schedule of an active heinzel the ticks have listed (``TICK_QUERY``'s ``?3``)."""

    async def session(self, heinzel_id: str) -> HeldSession:
        """Count the spines this kernel opens, so a tick can show it opened none for nothing."""
        if heinzel_id not in self.sessions:
            self.spine_opens += 1
        return await super().session(heinzel_id)

    # -- the tick --------------------------------------------------------------------------

    async def tick_once(
        self, *, now: datetime | None = None, zone: str | None = None
    ) -> TickReport:
        """One tick: plan with one index query, fetch what is due, run, skip or defer."""
        started = time.perf_counter()
        if self.index.damage_seen or self.index.overwritten():
            await self._heal_index()
        queries, opens = self.index.queries, self.spine_opens
        moment = as_utc(now or now_utc())
        try:
            fetcher = self._source_fetcher()
            fetches = fetcher.fetches
            if not self.remarked:
                # A pass over every heinzel's folder: off the loop, which a daemon answers on.
                # A marker it makes just after a turn took the request costs one spine read.
                await asyncio.to_thread(remark_pending, self.home.heinzel_root)
                self.remarked = True
            queued = await deliver_queued(self, undelivered(self.home.heinzel_root))
            plan, staged, spent, noticed, observed, needs = await self._plan(
                moment, zone, discover=True
            )
            team: list[TickProblem] = []
            teamed = isinstance(self, TeamWork) and self.has_team
            if teamed:
                ttl = timedelta(seconds=2 * self._interval())
                plan, team = await self.team_before_turns(plan, moment, ttl)
            report = await self._carry_out(plan, moment, spent=spent, noticed=noticed)
            if teamed:
                team += await self.team_after_turns(moment)
            told, flow_problems = await self._tell_flow(needs, moment)
        except HzError:
            raise
        except Exception as exc:
            raise HzError("HZT121", f"the tick failed: {_described(exc)}") from exc
        problems = queued + observed + team + flow_problems
        return report.model_copy(
            update={
                "notices": report.notices + told,
                "fetches": fetcher.fetches - fetches,
                "from_cache": len(staged.from_cache),
                "index_queries": self.index.queries - queries,
                "spines_opened": self.spine_opens - opens,
                "problems": problems + report.problems,
                "seconds": round(time.perf_counter() - started, 6),
            }
        )

    async def _tell_flow(
        self, needs: list[Need], now: datetime
    ) -> tuple[list[str], list[TickProblem]]:
        """Nudge the owners of outputs a reader needs soon, and tell them at the deadline
        (``hz_kernel.flow``); a notice that cannot be written now is tried next tick. A home
        where no reader names ``needed_by`` asks the index nothing more."""
        if not needs:
            return [], []
        waiting: dict[tuple[str, str], tuple[str, str | None]] = {}
        named: list[Need] = []
        for need in needs:
            found = await self.index.fetch("", FLOW_WAITING_QUERY, (need.output, need.upstream))
            if found:
                # The upstream by the name it has now: the reader may name it as it was.
                need = dataclasses.replace(need, upstream=str(found[0]["name"]))
                waiting[need.upstream, need.output] = (found[0]["id"], found[0]["placed"])
            named.append(need)
        needs = named
        known: dict[str, set[str]] = {}
        for row in await self.index.fetch("", FLOW_NOTICES_QUERY):
            known.setdefault(row["heinzel"], set()).add(row["key"])
        told: list[str] = []
        problems: list[TickProblem] = []
        for notice in flow_notices(needs, waiting, known, now):
            try:
                async with self.holding(notice.upstream_id) as held:
                    await held.append(NoticeRaised(key=notice.key, notice=notice.notice))
            except Exception as exc:
                problems.append(_problem(exc, heinzel=notice.upstream_id))
            else:
                told.append(notice.notice)
        return told, problems

    async def _heal_index(self) -> None:
        """Rebuild an index found damaged (a query met HZS094, or noise replaced the file), as
        ``hz heinzel reindex`` would.

        The index is derived: the kernel that ticks (a daemon, an embedded
        cockpit) rebuilds it from the spines itself, so every later tick and
        listing works again without a restart or a command from the user.
        """
        report = await self.reindex()
        _log.warning(
            "HZD137: %s: the index was damaged; rebuilt it from the spines "
            "(%d heinzels, %d events)",
            self.index.path,
            report.heinzels,
            report.events,
        )

    async def plan_wakes(
        self, *, now: datetime | None = None, zone: str | None = None
    ) -> list[PlannedTurn]:
        """What a tick would do now, without doing it (fetches are staged all the same)."""
        plan, *_ = await self._plan(as_utc(now or now_utc()), zone)
        return plan

    def tick_status(self) -> api.TickStatus | None:
        """The loop's last tick, its next and what the last one left undone (None: no loop)."""
        pulse = self.pulse
        if pulse is None:
            return None
        report = pulse.report
        last = pulse.last_at
        return api.TickStatus(
            interval_s=pulse.interval,
            ticks=pulse.ticks,
            ticking_since=stamp(pulse.since) if pulse.since is not None else None,
            last_at=stamp(last) if last is not None else None,
            next_at=stamp(last + timedelta(seconds=pulse.interval)) if last is not None else None,
            error=pulse.error,
            woken=len(report.woken) if report is not None else 0,
            skipped=[f"{s.name} ({s.reason})" for s in report.skipped] if report else [],
            deferred=[f"{d.name} ({d.reason})" for d in report.deferred] if report else [],
        )

    def _interval(self) -> float:
        """The tick loop's interval, or the configured one for a tick run from outside a loop."""
        return self.pulse.interval if self.pulse is not None else tick_interval(self.home.settings)

    def _rows(self, text: str | None, *, more: bool = False) -> list[HeinzelRow]:
        """The rows of ``TICK_QUERY``'s answer (or, ``more``, of ``ROWS_BY_ID``'s in the same
        tick); a row whose text is the last tick's is the last tick's ``HeinzelRow``, so a
        tick decodes only rows that changed (rows are never changed)."""
        last = getattr(self, "_tick_rows", {})
        rows = {
            line: last.get(line) or HeinzelRow.from_index(orjson.loads(line))
            for line in (text.split("\n") if text else ())
        }
        self._tick_rows = {**last, **rows} if more else rows
        return list(rows.values())

    def _schedules(self) -> set[str]:
        if not hasattr(self, "_tick_schedules"):
            self._tick_schedules = set()
        return self._tick_schedules

    async def _more_rows(self, rows: list[HeinzelRow], wanted: Iterable[str]) -> list[HeinzelRow]:
        """The full rows of the heinzels in ``wanted`` that ``rows`` lacks (one more query,
        asked only when one has something to do that the tick's query could not see)."""
        have = set(map(_ID, rows))
        missing = sorted(set(wanted) - have)
        if not missing:
            return []
        (found,) = await self.index.fetch("", ROWS_BY_ID, (orjson.dumps(missing).decode(),))
        return self._rows(found["rows"], more=True)

    def failure_ledger(self) -> FailureLedger:
        """The home's record of failed heinzels, read once by this kernel (the one ticking)."""
        if not hasattr(self, "_ledger"):
            self._ledger = FailureLedger(failures_path(self.home.heinzel_root))
        return self._ledger

    async def _plan(
        self, now: datetime, zone: str | None, *, discover: bool = False
    ) -> tuple[list[PlannedTurn], Staged, float, bool, list[TickProblem], list[Need]]:
        settings = self.home.settings
        day = now.date().isoformat()
        clock = self.slot_clock(zone or self.home.settings.heinzel.timezone)
        ledger = self.failure_ledger()
        latest = {expr: clock.latest_key(expr, now) or "" for expr in self._schedules()}
        (found,) = await self.index.fetch(
            "",
            TICK_QUERY,
            (day, cap_notice_key(day), orjson.dumps(latest).decode(), _ids(ledger.failures)),
        )
        spent, noticed = float(found["spent_today"]), bool(found["cap_noticed"])
        self.has_team = bool(found["has_team"])
        rows = self._rows(found["rows"])
        self._schedules().update(r.schedule for r in rows if r.schedule and r.active)
        idle: dict[str, str] = orjson.loads(found["idle"])
        discovery = await self._discover(now) if discover and found["has_hints"] else []
        ledger.keep_only(set(orjson.loads(found["known"])))
        backing_off = ledger.backing_off(now)
        observed = await self._observe_drafts(
            [r for r in rows if r.pending_draft and r.id not in backing_off], now
        )
        busy = self._busy(rows)
        reads = upstreams(rows, settings.documents.resolve, self.index.former_names)
        watches = watched(rows, reads, leave_out=busy)
        standing = _standing(idle)
        groups = _grouped(watches, standing)
        slots = due_slots(rows, clock, now)
        forced = {w.key for heinzel in slots for w in watches.get(heinzel, [])}
        fetcher = self._source_fetcher()
        staged = stage(fetcher, groups, now=now, forced=forced)
        if staged.fetched:
            crashpoints.reached("tick:after-fetch")

        async def wake(wanted: Iterable[str]) -> dict[str, list[Watch]]:
            """Add the rows of ``wanted`` and of every idle text that moved; group again."""
            stirred = [text for text, kept in standing.items() if _moved(kept, staged)]
            ids = chain(wanted, *(idle[text].split(",") for text in stirred))
            woken = await self._more_rows(rows, ids)
            for text in stirred:
                del standing[text]
            rows.extend(woken)
            watches.update(watched(woken, reads, leave_out=busy))
            return _grouped(watches, standing)

        waiting = undelivered(self.home.heinzel_root)
        discovered = await self._owed_discoveries(now)
        groups = await wake(chain(waiting, discovered))
        ctx = TickInputs(
            now=now,
            rows=rows,
            watches=watches,
            staged=staged,
            slots=slots,
            moves=_moves(rows, watches, staged),
            done_keys=set(),
            heights=heights(map(_ID, rows), reads),
            busy=busy,
            capped=spent >= settings.heinzel.max_usd_per_day,
            max_wakes=settings.heinzel.max_wakes_per_tick,
            backing_off=backing_off,
            undelivered=waiting,
            discovered=discovered,
        )
        ctx.done_keys = await self._done_keys(ctx.candidates())
        if ctx.discovered:
            self._forget_taken(ctx)
        stuck = [
            key
            for key in staged.from_cache
            if is_due(groups[key], staged.results[key], now)
            and not _owed(key, groups[key], staged, ctx.done_keys)
        ]
        if stuck:
            for key in stuck:
                request = groups[key][0].request
                fetch_into(fetcher, staged, key, request, now=now, previous=staged.results.get(key))
            crashpoints.reached("tick:after-fetch")
            groups = await wake(())
            ctx.moves = _moves(rows, watches, staged)
            ctx.done_keys |= await self._done_keys(ctx.candidates() - ctx.done_keys)
        readers = _source_readers(staged, groups, rows)
        needs = [
            need
            for row in rows
            if row.active and '"needed_by"' in row.inputs_json
            for need in needs_of(row.id, row.name, row.inputs)
        ]
        return plan_tick(ctx), staged, spent, noticed, discovery + readers + observed, needs

    # -- discovery -------------------------------------------------------------------------

    async def _discover(self, now: datetime) -> list[TickProblem]:
        """The daily discovery job (``docs/discovery.md``): once per local day of the user's
        zone, remembered in ``discovery.json`` so a restart or another tick that day does not
        run it again. Each new source under a heinzel's ``discover`` hints is recorded once
        (``source.discovered``) and owes the heinzel one ``discovered`` wake. A hint that
        cannot be expanded (a missing folder, an unreachable team repository) is a problem
        of this tick, named; the job goes on with the other hints and heinzels."""
        path = discovery_path(self.home.heinzel_root)
        state = DiscoveryState.load(path)
        zone = user_zone(self.home.settings.heinzel.timezone)
        day = now.astimezone(zone).date().isoformat()
        if state.day == day:
            return []
        problems: list[TickProblem] = []
        inventories: dict[str, list[str] | HzError] = {}
        owed = dict.fromkeys(state.owed)
        for row in await self.index.fetch("", DISCOVER_QUERY):
            await let_others_run()
            try:
                found = await self._discover_for(row, inventories, problems)
            except Exception as exc:
                problems.append(_problem(exc, heinzel=row["id"], name=row["name"]))
                continue
            owed = {entry: None for entry in owed if entry[0] != row["id"]}
            owed.update(dict.fromkeys(found))
        try:
            DiscoveryState(day=day, owed=list(owed)).save(path)
        except OSError as exc:
            problems.append(
                TickProblem(
                    code="HZT037",
                    message="discovery cannot keep its day and owed wakes "
                    f"({exc.strerror or type(exc).__name__}); it runs again next tick",
                    place=str(path),
                )
            )
        return problems

    async def _discover_for(
        self,
        row: dict[str, Any],
        inventories: dict[str, list[str] | HzError],
        problems: list[TickProblem],
    ) -> list[tuple[str, str]]:
        """Record the new sources of one heinzel; every wake it is owed (rebuilt from its
        spine, so an owed wake a lost ``discovery.json`` forgot comes back)."""
        hz = orjson.loads(row["hz"])
        resolve = self.home.settings.documents.resolve
        team_repo = (hz.get("team") or {}).get("repo") or self.home.settings.team.repo
        reading = {
            input_identity(InputSpec.model_validate(spec), resolve, team_repo)
            for spec in (hz.get("inputs") or {}).values()
        }
        async with self.holding(row["id"]) as held:
            projection = held.projection
            seen = KnownSources([*reading, *projection.discovered, *projection.declined])
            room, full = MAX_NEW_PER_DAY, False
            for hint in hz.get("discover") or []:
                if full:
                    break
                try:
                    sources = await self._hint_sources(str(hint), row, hz, inventories)
                except HzError as exc:
                    problems.append(
                        TickProblem(
                            code=exc.code,
                            message=f"discovery passed over the hint {hint!r}: {exc.message}",
                            place=f"{row['name']}: {exc.place}" if exc.place else row["name"],
                            heinzel=row["id"],
                        )
                    )
                    continue
                hostile = [source for source in sources if not plainly_named(source)]
                if hostile:
                    problems.append(_hostile(len(hostile), hint, row))
                for source in sources:
                    if source in seen or not plainly_named(source):
                        continue
                    if room == 0:
                        full = True
                        break
                    seen.add(source)
                    key = discovered_key(held.id, source)
                    try:
                        found = SourceDiscovered(source=source, hint=str(hint))
                        await held.append(found, key=key)
                        room -= 1
                    except (HzError, ValueError) as exc:
                        problems.append(_unrecorded(exc, hint, row))
            if full:
                problems.append(
                    TickProblem(
                        code="HZT038",
                        message=f"discovery recorded {MAX_NEW_PER_DAY} new sources today, "
                        "its most for one heinzel a day; the rest come on the next days",
                        place=row["name"],
                        heinzel=row["id"],
                    )
                )
            keys = (discovered_key(held.id, source) for source in projection.discovered)
            return [(held.id, key) for key in keys if key not in projection.keys]

    async def _hint_sources(
        self,
        hint: str,
        row: dict[str, Any],
        hz: dict[str, Any],
        inventories: dict[str, list[str] | HzError],
    ) -> list[str]:
        """What one hint finds now. Git and the folder walk run in a worker thread: a slow
        disk or remote does not stop the kernel answering."""
        if not hint.startswith(TEAM_HINT):
            return await asyncio.to_thread(
                folder_sources, hint, self.home.settings.documents.resolve
            )
        repo = (hz.get("team") or {}).get("repo") or self.home.settings.team.repo
        if row["namespace"] != "team" or not repo:
            raise HzError(
                "HZS114",
                "a team: hint needs a team repository: hz.team.repo or [team] repo in hz.toml",
                hint,
            )
        if repo not in inventories:
            try:
                inventories[repo] = await asyncio.to_thread(
                    TeamRepo(self.home.root, repo).inventory
                )
            except HzError as exc:
                inventories[repo] = exc
        listed = inventories[repo]
        if isinstance(listed, HzError):
            raise listed
        return team_sources(hint, listed)

    async def _owed_discoveries(self, now: datetime) -> dict[str, list[Wake]]:
        """The ``discovered`` wakes owed, by heinzel, but none for a heinzel whose amendment
        waits for the user: its proposals come one at a time."""
        owed = DiscoveryState.load(discovery_path(self.home.heinzel_root)).owed
        if not owed:
            return {}
        ids = sorted({heinzel for heinzel, _ in owed})
        rows = await self.index.fetch("", AMENDING_QUERY, (orjson.dumps(ids).decode(),))
        amending = {r["id"] for r in rows}
        found: dict[str, list[Wake]] = {}
        for heinzel, key in owed:
            if heinzel not in amending:
                found.setdefault(heinzel, []).append(Wake(cause="discovered", key=key, due_at=now))
        return found

    def _forget_taken(self, ctx: TickInputs) -> None:
        """Drop the owed wakes a turn took (their keys finished or were skipped)."""
        path = discovery_path(self.home.heinzel_root)
        state = DiscoveryState.load(path)
        left = [entry for entry in state.owed if entry not in ctx.done_keys]
        if len(left) != len(state.owed):
            DiscoveryState(day=state.day, owed=left).save(path)

    async def _observe_drafts(self, rows: list[HeinzelRow], now: datetime) -> list[TickProblem]:
        """Approvals made in the documents, one heinzel at a time: one failure stays its own."""
        problems: list[TickProblem] = []
        if not isinstance(self, DraftWatcher):
            return problems
        for row in rows:
            assert row.pending_draft is not None
            try:
                noticed = await self.observe_drafts([(row.id, row.pending_draft)])
            except Exception as exc:
                problems.append(self._failed(row.id, row.name, exc, now))
                noticed = [row.pending_draft]
            # A draft decided in its document cost a spine read and write; one still waiting,
            # a read of the document alone.
            if noticed:
                await let_others_run()
        return problems

    async def _carry_out(
        self, plan: list[PlannedTurn], now: datetime, *, spent: float, noticed: bool
    ) -> TickReport:
        if not isinstance(self, TurnEngine):
            raise HzError("HZT103", "this kernel has no turn engine to run wakes with")
        cap = self.home.settings.heinzel.max_usd_per_day
        day = now.date().isoformat()
        woken: list[TickWoken] = []
        skipped: list[TickSkipped] = []
        deferred: list[TickDeferred] = []
        problems: list[TickProblem] = []
        capped_at: list[PlannedTurn] = []
        for item in plan:
            if item.action != "defer":
                await let_others_run()
            if spent >= cap and (item.action == "resume" or (item.action == "run" and item.wakes)):
                item = capped(item)
            keys = [w.key for w in item.wakes]
            try:
                if item.action == "defer":
                    assert item.reason is not None
                    deferred.append(
                        TickDeferred(
                            heinzel=item.heinzel,
                            name=item.name,
                            reason=item.reason,  # type: ignore[arg-type]
                            keys=keys,
                            due_at=item.due_at,
                            holder=item.holder,
                        )
                    )
                elif item.action == "skip":
                    reason: SkipReason = item.reason  # type: ignore[assignment]
                    turn = await self.skip_wakes(
                        item.heinzel,
                        list(item.wakes),
                        reason=reason,
                        moved=list(item.moved),
                        holder=item.holder,
                    )
                    if reason == "cap":
                        capped_at.append(item)
                    skipped.append(
                        TickSkipped(
                            heinzel=item.heinzel,
                            name=item.name,
                            reason=reason,
                            keys=keys,
                            moved=list(item.moved),
                            turn=turn,
                            holder=item.holder,
                        )
                    )
                elif item.action == "resume":
                    assert item.waiting_turn is not None and item.woken_by is not None
                    if not isinstance(self, WaitingTurns):
                        raise HzError(
                            "HZT105", "this kernel cannot resume waiting turns", item.name
                        )
                    await self.resume_waiting(item.heinzel, item.waiting_turn, item.woken_by)
                    woken.append(_woken(item, item.waiting_turn))
                    spent = await self._spent(day)
                else:
                    turn = await self.run_wakes(item.heinzel, list(item.wakes))
                    if item.wakes or turn is not None:
                        woken.append(_woken(item, turn))
                    spent = await self._spent(day)
            except SpineBusy:
                deferred.append(
                    TickDeferred(
                        heinzel=item.heinzel,
                        name=item.name,
                        reason="busy",
                        keys=keys,
                        due_at=item.due_at,
                    )
                )
            except Exception as exc:
                problems.append(self._failed(item.heinzel, item.name, exc, now))
            else:
                if item.action != "defer":
                    self.failure_ledger().clear(item.heinzel)
        notices: list[str] = []
        if capped_at and not noticed:
            try:
                notices.append(await self._tell_cap(capped_at, day, spent, cap))
            except Exception as exc:
                problems.append(_problem(exc, heinzel=None))
        return TickReport(
            at=now,
            due=len(plan),
            woken=woken,
            deferred=deferred,
            skipped=skipped,
            problems=problems,
            notices=notices,
        )

    async def _tell_cap(self, capped: list[PlannedTurn], day: str, spent: float, cap: float) -> str:
        """Tell the user once a day, through the heinzel whose wake was due first."""
        first = min(capped, key=lambda p: (p.due_at, p.name))
        notice = (
            f"Spending today reached {spent:.2f} USD, the daily cap of {cap:.2f} USD: "
            f"due turns are skipped until tomorrow (UTC)."
        )
        async with self.holding(first.heinzel) as held:
            await held.append(NoticeRaised(key=cap_notice_key(day), notice=notice))
        return notice

    # -- helpers ---------------------------------------------------------------------------

    def _failed(self, heinzel_id: str, name: str, exc: Exception, now: datetime) -> TickProblem:
        """Record that the tick's work for one heinzel failed; the tick goes on without it.

        A busy spine (another process writing it) is not the heinzel's failure
        and is only reported. After an unexpected error the kernel lets go of
        the heinzel's session (unless a turn of it still runs here), so the
        next try reads its files afresh rather than trusting what was in memory.
        """
        problem = _problem(exc, heinzel=heinzel_id, name=name)
        if problem.code in BUSY_CODES:
            return problem
        self.failure_ledger().record(
            heinzel_id, code=problem.code, message=problem.message, place=problem.place, now=now
        )
        if not isinstance(exc, HzError):
            _log.info("the tick's work for %s (%s) failed", name, heinzel_id, exc_info=exc)
            if not (isinstance(self, TurnEngine) and self.running_turn(heinzel_id)):
                self.release(heinzel_id)
        return problem

    async def _done_keys(self, pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these (heinzel, key) pairs already finished or were skipped."""
        if not pairs:
            return set()
        rows = await self.index.fetch("", DONE_KEYS_QUERY, (orjson.dumps(sorted(pairs)).decode(),))
        return {(r["heinzel"], r["key"]) for r in rows}

    async def _spent(self, day: str) -> float:
        rows = await self.index.fetch(
            "", "SELECT COALESCE(SUM(usd), 0.0) AS usd FROM costs WHERE day = ?", (day,)
        )
        return float(rows[0]["usd"])

    def _busy(self, rows: Iterable[HeinzelRow]) -> set[str]:
        """Heinzels with a turn awake in another process that still holds the spine's lock.

        An awake turn whose lock is free was cut off by a crash; one whose
        session this kernel holds is its own, and the engine runs turns of
        one heinzel one after the other. Either way running it is right: the
        engine resumes an open turn before anything else.
        """
        busy: set[str] = set()
        for row in rows:
            if not row.awake_turn or row.id in self.sessions:
                continue
            lock = FileLock(self.home.heinzel_dir(row.id) / LOCK_NAME)
            if lock.try_acquire():
                lock.release()
            else:
                busy.add(row.id)
        return busy

    def _source_fetcher(self) -> SourceFetcher:
        if not hasattr(self, "_fetcher"):
            base = self.home.settings.documents.resolve(".")
            self._fetcher = SourceFetcher(
                SourceCache(self.home.sources_dir),
                default_registry(
                    base_dir=base, heinzel_root=self.home.heinzel_root, home=self.home.root
                ),
            )
        return self._fetcher


def _standing(idle: dict[str, str]) -> dict[str, list[Watch]]:
    """The watches of each idle ``inputs`` text, made for the first of its heinzels: all of
    them watch the same requests with the same recheck, facets and last fingerprints."""
    return {
        text: [
            Watch(ids.partition(",")[0], name, request, key, facet, last_fp, recheck_s)
            for name, request, key, facet, last_fp, recheck_s in input_shapes(text)
        ]
        for text, ids in idle.items()
    }


def _grouped(
    watches: dict[str, list[Watch]], standing: dict[str, list[Watch]]
) -> dict[str, list[Watch]]:
    return group_watches(
        chain(chain.from_iterable(watches.values()), chain.from_iterable(standing.values()))
    )


def _moved(watches: Iterable[Watch], staged: Staged) -> bool:
    """Whether one of these watches moved or could not be read (its heinzels have work)."""
    return any(w.key in staged.errors or staged.move(w.key, w) is not None for w in watches)


def _ids(ids: Iterable[str]) -> str:
    return orjson.dumps(list(ids)).decode()


def _moves(
    rows: Iterable[HeinzelRow], watches: dict[str, list[Watch]], staged: Staged
) -> dict[str, tuple[list[Wake], bool]]:
    """The heinzels with an input that moved or could not be read (the rest have nothing).

    Whether a watch moved depends only on its request, facet and last fingerprint, all in
    the row's ``inputs`` text: once a heinzel watching all its inputs found nothing, the
    hundreds in step with it (the same text) are passed over without asking.
    """
    found = {}
    quiet: set[str] = set()
    for row in rows:
        kept = watches.get(row.id)
        whole = kept is not None and kept is row.own_watches
        if kept is None or (whole and row.inputs_json in quiet):
            continue
        wakes, failed = moves = source_moves(row, kept, staged)
        if wakes or failed:
            found[row.id] = moves
        elif whole:
            quiet.add(row.inputs_json)
    return found


def _owed(key: str, watches: list[Watch], staged: Staged, done: set[tuple[str, str]]) -> bool:
    """Does a staged arrival still owe some watcher a wake (a move whose key is not done)?"""
    for watch in watches:
        fp = staged.move(key, watch)
        if fp is None:
            continue
        if (watch.heinzel, source_key(watch.heinzel, watch.input, fp)) not in done:
            return True
    return False


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _source_readers(
    staged: Staged, groups: dict[str, list[Watch]], rows: list[HeinzelRow]
) -> list[TickProblem]:
    """Each source that could not be read, its place led by the heinzels that read it.

    A source is fetched once for all its readers, so the problem is no one
    heinzel's (``heinzel`` stays empty), but the line must say whose path to fix.
    """
    names = {row.id: row.name for row in rows}
    problems: list[TickProblem] = []
    for key, error in staged.errors.items():
        readers = ", ".join(sorted({names.get(w.heinzel, w.heinzel) for w in groups[key]}))
        place = f"{readers}: {error.place}" if error.place else readers
        problems.append(TickProblem(code=error.code, message=error.message, place=place))
    return problems


def _hostile(count: int, hint: object, row: dict[str, Any]) -> TickProblem:
    """Found files whose names hold control or bidi characters (``HZT039``): not proposed,
    as their names could not be shown as they are; the line does not echo them."""
    return TickProblem(
        code="HZT039",
        message=f"discovery passed over {count} file(s) whose names hold control or bidi "
        "characters; rename them to have them proposed",
        place=f"{row['name']}: {hint}",
        heinzel=row["id"],
    )


def _unrecorded(exc: Exception, hint: object, row: dict[str, Any]) -> TickProblem:
    """A found file the spine may not record (``HZT036``), named by its reason, not its path:
    an e-mail-like name the spine refuses, a path too long. The hint's other files go on."""
    why = f"{exc.code}: {exc.message}" if isinstance(exc, HzError) else "the path is too long"
    return TickProblem(
        code="HZT036",
        message=f"discovery passed over a file it cannot record ({why})",
        place=f"{row['name']}: {hint}",
        heinzel=row["id"],
    )


def _problem(exc: Exception, *, heinzel: str | None, name: str | None = None) -> TickProblem:
    """A failure as the tick reports it: a coded error as it is, anything else as ``HZT120``.

    The place starts with the heinzel's name, so a line names whose work failed.
    """
    if isinstance(exc, HzError):
        place = f"{name}: {exc.place}" if name and exc.place else exc.place or name
        return TickProblem(code=exc.code, message=exc.message, place=place, heinzel=heinzel)
    return TickProblem(
        code="HZT120",
        message=f"the tick's work for this heinzel failed: {_described(exc)}",
        place=name,
        heinzel=heinzel,
    )


def _woken(item: PlannedTurn, turn: str | None) -> TickWoken:
    """What the report says of a run; a run with no wakes delivered the inbox (``asked``)."""
    return TickWoken(
        heinzel=item.heinzel,
        name=item.name,
        causes=[w.cause for w in item.wakes] or ["asked"],
        keys=[w.key for w in item.wakes],
        due_at=item.due_at,
        height=item.height,
        turn=turn,
        woken_by=item.woken_by,
    )


class TickPulse:
    """When the tick loop last finished a tick: what the daemon's health check reads.

    Measured on the monotonic clock (a pinned ``HZ_NOW`` must not make a
    stuck loop look fresh). The loop's start counts as a beat; a tick that
    fails as a whole does not. A tick that has not finished within two
    intervals is stale: the loop is stuck in a tick, or gone.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.last = time.monotonic()
        self.last_at: datetime | None = None
        """When the last tick finished, on the kernel's clock (what the kernel page shows)."""
        self.report: TickReport | None = None
        self.ticks = 0
        self.error: str | None = None
        self.since: datetime | None = None
        """When the tick under way began (None between ticks)."""

    def begin(self) -> None:
        self.since = now_utc()

    def beat(self, report: TickReport | None = None) -> None:
        self.last = time.monotonic()
        self.last_at = now_utc()
        self.report = report
        self.ticks += 1
        self.error = None
        self.since = None

    def failed(self, line: str) -> None:
        self.error = line
        self.since = None

    @property
    def age(self) -> float:
        """Seconds since the last tick finished (or the loop started)."""
        return time.monotonic() - self.last

    @property
    def stale(self) -> bool:
        return self.age > 2 * self.interval


async def run_tick_loop(
    kernel: TickCommands,
    interval: float | None,
    stop_event: asyncio.Event,
    *,
    on_report: Callable[[TickReport], None] | None = None,
    pulse: TickPulse | None = None,
) -> None:
    """Tick until ``stop_event`` is set: the daemon's and the embedded cockpit's heartbeat.

    ``interval`` defaults to ``tick_interval`` (``HZ_TICK_SECONDS``). A tick
    that fails as a whole, whatever it raised, is reported as a problem and
    the loop goes on; ``pulse`` learns of every tick that finished.
    """
    seconds = interval if interval is not None else tick_interval(kernel.home.settings)
    kernel.pulse = pulse = pulse or TickPulse(seconds)
    prune = DailyPrune(kernel.prune) if isinstance(kernel, Pruner) else None
    while not stop_event.is_set():
        pulse.begin()
        try:
            report = await kernel.tick_once()
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, HzError)
                else HzError("HZT121", f"the tick failed: {_described(exc)}")
            )
            if not isinstance(exc, HzError) and error.one_line() != pulse.error:
                _log.info("the tick failed", exc_info=exc)  # a bug: its traceback, once
            pulse.failed(error.one_line())
            report = TickReport(
                at=now_utc(),
                due=0,
                problems=[TickProblem(code=error.code, message=error.message, place=error.place)],
            )
        else:
            pulse.beat(report)
        if prune is not None and (failed := await prune()) is not None:
            problem = TickProblem(code=failed.code, message=failed.message, place=failed.place)
            report = report.model_copy(update={"problems": [*report.problems, problem]})
        if on_report is not None:
            on_report(report)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop_event.wait(), timeout=seconds)
