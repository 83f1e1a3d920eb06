"""Turn commands: wakes, the conversation (chat, stop, retry, answer), drafts and approvals.

One turn runs at a time per heinzel. A wake or a message that arrives while
a turn runs is journalled (``turn.steered`` during gather/think, else
``turn.requested``) and becomes one follow-up turn when the running one
ends; messages are on disk in the inbox before anything acts on them, so a
crash never loses one. A long-lived kernel (the daemon) runs turns in the
background and answers at once; a short-lived one runs them inline.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ulid import ULID

from hz_kernel import api
from hz_kernel.adapters.documents import DraftStatus, MarkdownDocuments
from hz_kernel.clock import now_utc
from hz_kernel.commands.waiting import Verb, WaitingItem, resolve_waiting, short_key
from hz_kernel.core import KernelCore
from hz_kernel.daemon.admission import AdmissionAborted, AdmissionTimeout, Blocker
from hz_kernel.engine.wakes import Wake, request_key, retry_key
from hz_kernel.errors import HzError, UsageError
from hz_kernel.store.bodies import read_body
from hz_kernel.store.inbox import Inbox, InboxRequest, check_request_id
from hz_kernel.store.locks import SpineBusy
from hz_kernel.store.session import HeldSession
from hz_kernel.terms import STEP_NAMES
from hz_kernel.vocabulary import (
    ContextEdit,
    DraftRejected,
    LessonDismissed,
    QuestionAnswered,
    SkipReason,
    TurnQueued,
    TurnRequested,
    TurnSkipped,
    TurnSteered,
    WokenBy,
)

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner
    from hz_kernel.engine.state import TurnState


def _runner(kernel: KernelCore, held: HeldSession) -> TurnRunner:
    """A turn runner. Imported here, not at the top: the engine pulls in pydantic-ai, whose
    import costs more than a second, and listings and other reads must not pay for it."""
    from hz_kernel.engine.runner import TurnRunner

    return TurnRunner(kernel, held)


def _load_state(held: HeldSession, turn: str) -> object:
    from hz_kernel.engine.state import load_state

    return load_state(held.scan.events, turn)


class TurnCommands(KernelCore):
    """``hz heinzel wake|chat|stop|retry|resume|answer|dismiss``, ``hz drafts``, draft approval."""

    def _turn_lock(self, heinzel_id: str) -> asyncio.Lock:
        locks: defaultdict[str, asyncio.Lock] = self.__dict__.setdefault(
            "_turn_locks", defaultdict(asyncio.Lock)
        )
        return locks[heinzel_id]

    @property
    def _running(self) -> dict[str, TurnRunner]:
        running: dict[str, TurnRunner] = self.__dict__.setdefault("_running_turns", {})
        return running

    async def _in_background(
        self, heinzel_id: str, work: Callable[[], Awaitable[str | None]]
    ) -> str | None:
        """Run ``work`` now (short-lived kernel) or as a task that outlives the call."""
        if not self.long_lived:
            return await work()

        async def guarded() -> None:
            turn: str | None = None
            try:
                turn = await work()
            except HzError as exc:
                self.warnings.append(exc)
                _log.warning("%s", exc.one_line())
            except Exception:
                _log.exception("a background turn of %s failed", heinzel_id)
            finally:
                _tell_took(turn)

        task = asyncio.get_running_loop().create_task(guarded(), name=f"turn:{heinzel_id}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return None

    def turn_activity(self) -> list[api.TurnActivity]:
        """The turns this kernel runs (oldest admission first), then those queued, in order."""
        now = now_utc()
        activity: list[api.TurnActivity] = []
        for ticket in self.admission.tickets("turn"):
            held = self.sessions.get(ticket.owner)
            name = str(held.projection.heinzel["name"]) if held is not None else ticket.owner
            runner = self._running.get(ticket.owner)
            turn = runner.turn if runner is not None else None
            if ticket.admitted_at is None:
                activity.append(
                    api.TurnActivity(
                        heinzel=ticket.owner,
                        name=name,
                        turn=turn,
                        queued=ticket.blocked_by or "capacity",
                        elapsed_s=_seconds_since(ticket.since, now),
                    )
                )
                continue
            state = runner.state if runner is not None else None
            done = state.done if state is not None else []
            activity.append(
                api.TurnActivity(
                    heinzel=ticket.owner,
                    name=name,
                    turn=turn,
                    step=next((step for step in STEP_NAMES if step not in done), "finish"),
                    elapsed_s=_seconds_since(ticket.admitted_since or ticket.since, now),
                    usd=round(state.usd, 6) if state is not None else 0.0,
                    tokens=state.tokens if state is not None else 0,
                )
            )
        return activity

    def running_turns(self) -> dict[str, str]:
        """Every turn running in this kernel now: heinzel id → turn id."""
        return {heinzel_id: runner.turn for heinzel_id, runner in self._running.items()}

    def running_turn(self, heinzel_id: str) -> str | None:
        """The turn of this heinzel that runs in this kernel now, if any."""
        runner = self._running.get(heinzel_id)
        return runner.turn if runner is not None else None

    def running_count(self) -> int:
        """How many turns run in this kernel now (what quitting an embedded cockpit would cut)."""
        return len(self._running)

    # -- running wakes -------------------------------------------------------------------

    async def run_wakes(
        self,
        heinzel_id: str,
        wakes: list[Wake],
        *,
        parent_turn: str | None = None,
        from_step: str | None = None,
    ) -> str | None:
        """Run one turn for these wakes, then one follow-up turn for what arrived meanwhile.

        Keys whose turn already finished or was skipped are dropped. While a
        turn of this heinzel runs in this kernel, the wakes are journalled as
        ``turn.requested`` and the running turn's follow-up takes them.
        """
        if self.draining:
            return None  # the wakes stay admitted (and the inbox marked): the next start runs them
        lock = self._turn_lock(heinzel_id)
        if lock.locked():
            held_now = self.sessions.get(heinzel_id)
            keys = held_now.projection.keys if held_now is not None else {}
            taken = [str(keys[w.key]["turn"]) for w in wakes if w.key in keys]
            if taken:  # sent again: the turn that took it answers it
                _tell_took(taken[-1])
            else:
                _tell_behind(heinzel_id, self.running_turn(heinzel_id))
        if lock.locked() and heinzel_id in self._running:
            held = self.sessions[heinzel_id]
            for wake in wakes:
                if wake.key not in held.projection.keys:
                    await held.append(
                        TurnRequested(cause=wake.cause, key=wake.key, request_id=wake.request_id),
                        turn=self._running[heinzel_id].turn,
                    )
            return None
        async with lock, self.holding(heinzel_id) as held:
            self._check_may_run(held)
            inbox = Inbox(held.dir)
            inbox.unmark()
            try:
                last = await self._resume_open_turns(held)
                keys = held.projection.keys
                fresh = [
                    w
                    for w in wakes
                    if w.key not in keys
                    and not (w.request_id and inbox.withdrawn(w.request_id))  # handed back
                ]
                if not fresh:
                    done = [keys[w.key]["turn"] for w in wakes if w.key in keys]
                    last = done[-1] if done else last
                if fresh:
                    last = await self._run_turn(
                        held, fresh, parent_turn=parent_turn, from_step=from_step
                    )
                while follow := self._follow_ups(held):
                    last = await self._run_turn(held, follow)
            except _Stopped as stopped:
                return stopped.turn
            except HzError:
                # The spine refused the turn (found damaged, say): the admitted requests stay
                # marked for the tick, which delivers them once the heinzel may run again.
                inbox.mark()
                raise
            return last

    async def _run_turn(
        self,
        held: HeldSession,
        wakes: list[Wake],
        *,
        parent_turn: str | None = None,
        from_step: str | None = None,
    ) -> str:
        turn = str(ULID())
        request_ids = [w.request_id for w in wakes if w.request_id]
        with self._registered(held, turn) as runner:
            # After the runner (its first one loads the engine, which is no time of the turn's).
            deadline = now_utc() + timedelta(seconds=self.home.settings.heinzel.turn_timeout_s)

            async def start() -> TurnState:
                return await runner.start(
                    turn,
                    wakes,
                    request_ids=request_ids,
                    parent_turn=parent_turn,
                    from_step=from_step,
                    deadline=deadline,
                )

            keys = [w.key for w in wakes]
            try:
                async with self._admitted(held, turn, deadline, keys, tell_started=False):
                    state = await start()
                    # Told once turn.started is durable: a wake answered then needs no synced
                    # request file (``_settle``).
                    _tell_turn(held.id, turn, keys, "started")
                    await runner.run(state)
            except AdmissionTimeout as refused:
                await runner.abandon(await start(), refused.one_line())
            except AdmissionAborted as aborted:
                if runner.state is None:
                    raise
                await runner.abandon(runner.state, aborted.one_line())
            except asyncio.CancelledError:
                if not runner.stopping or turn in held.projection.turns:
                    raise
                _uncancel()
                await runner.abandon(await start(), "stopped")
        if runner.stopping or self.draining:
            raise _Stopped(turn)
        return turn

    @contextlib.asynccontextmanager
    async def _admitted(
        self,
        held: HeldSession,
        turn: str,
        deadline: datetime,
        keys: list[str],
        *,
        tell_started: bool = True,
    ) -> AsyncIterator[None]:
        """Hold one of the kernel's turn slots; a turn that must wait journals why first.

        A turn that gets no slot before ``deadline`` (``HZD060``) or is
        stopped while it waits starts and ends at once, abandoned, so its
        keys are settled as a stopped or timed-out turn's would be. A turn
        that waits marks its inbox again first: its requests are taken only
        once it starts, so a process that dies while it waits leaves them
        for the next tick, never forgotten in an unmarked inbox.
        """

        async def queued(reason: Blocker) -> None:
            Inbox(held.dir).mark()
            await held.append(TurnQueued(reason=reason, keys=keys), turn=turn)
            _tell_turn(held.id, turn, keys, "waiting", reason)

        async with self.admission.turn(held.id, deadline, on_wait=queued):
            if tell_started:
                _tell_turn(held.id, turn, keys, "started")
            yield

    @contextlib.contextmanager
    def _registered(self, held: HeldSession, turn: str) -> Iterator[TurnRunner]:
        """A runner for ``turn``, known as this heinzel's running turn (for chat and stop)."""
        runner = _runner(self, held)
        runner.turn = turn
        runner.steer = self._steering(held, turn)
        runner.task = asyncio.current_task()
        self._running[held.id] = runner
        try:
            yield runner
        finally:
            self._running.pop(held.id, None)

    def _follow_ups(self, held: HeldSession) -> list[Wake]:
        """Wakes for everything that arrived while the last turn ran: one follow-up turn."""
        requests = held.projection.requests
        inbox = Inbox(held.dir)
        wakes: list[Wake] = []
        for row in held.projection.live("requests", requests):
            if row.get("key") in held.projection.keys:
                continue
            if inbox.withdrawn(str(row.get("request_id"))):
                continue  # a stop handed it back: its turn.requested delivers nothing
            wakes.append(
                Wake(
                    cause=row.get("cause") or "asked",
                    key=str(row["key"]),
                    request_id=row.get("request_id")
                    if row.get("request_id") != row.get("key")
                    else None,
                )
            )
        for request in inbox.pending(requests):
            if request.kind in ("chat", "wake"):
                key = request_key(held.id, request.request_id)
                if key not in held.projection.keys:
                    wakes.append(Wake(cause="asked", key=key, request_id=request.request_id))
        return wakes

    def _check_may_run(self, held: HeldSession) -> None:
        self._check_row(held.projection.heinzel)

    @staticmethod
    def _check_row(row: Mapping[str, Any]) -> None:
        """Refuse a heinzel that may not run now (a projection's or the index's row)."""
        if row["damaged"]:
            raise HzError(
                "HZE001",
                "its spine has a broken chain; look with hz heinzel verify, then accept it",
                str(row["name"]),
            )
        if row["contract_version"] is None:
            raise UsageError("HZE002", "approve its contract first (hz approve)", str(row["name"]))
        if row["retired"] or row["paused"]:
            raise UsageError("HZE003", f"it is {row['state']}", str(row["name"]))

    async def accepted(self, heinzel_id: str) -> None:
        """A long-lived kernel resumes at once a turn the accepted break had left open (a cut
        spine can end mid-turn): it would otherwise show running, with nothing running it,
        until the heinzel's next wake."""
        if not self.long_lived or heinzel_id in self.running_turns():
            return

        async def resume() -> str | None:
            async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
                try:
                    return await self._resume_open_turns(held)
                except _Stopped as stopped:
                    return stopped.turn

        await self._in_background(heinzel_id, resume)

    async def _resume_open_turns(self, held: HeldSession) -> str | None:
        last = None
        for turn in held.projection.live("turns", held.projection.turns):
            if turn["status"] == "running":
                await self._resume_turn(held, str(turn["turn"]), "restart")
                last = str(turn["turn"])
        return last

    async def _resume_turn(self, held: HeldSession, turn: str, woken_by: str) -> None:
        from hz_kernel.engine.state import TurnState, timeout_s

        state = _load_state(held, turn)
        if not isinstance(state, TurnState) or self.draining:
            return
        left = timeout_s(state, self.home.settings.heinzel.turn_timeout_s) - state.ran_s
        deadline = now_utc() + timedelta(seconds=max(left, 1.0))
        with self._registered(held, turn) as runner:
            try:
                async with self._admitted(held, turn, deadline, state.keys):
                    resumed = await runner.resume(state, woken_by)  # type: ignore[arg-type]
                    if resumed is not None:
                        await runner.run(resumed)
            except (AdmissionTimeout, AdmissionAborted) as refused:
                await runner.abandon(state, refused.one_line())
            except asyncio.CancelledError:
                if not runner.stopping:
                    raise
                _uncancel()
                await runner.abandon(state, "stopped")
        if runner.stopping:
            raise _Stopped(turn)

    def _steering(self, held: HeldSession, turn: str) -> Callable[[], Awaitable[list[str]]]:
        """The think step's steering queue: pending ``steer`` messages, journalled on delivery."""

        async def deliver() -> list[str]:
            delivered = held.projection.requests
            texts: list[str] = []
            for request in Inbox(held.dir).pending(delivered):
                if request.mode != "steer" or request.kind != "chat":
                    continue
                await held.append(
                    TurnSteered(request_id=request.request_id, hash=_hash(request.message)),
                    turn=turn,
                )
                texts.append(request.message)
            return texts

        return deliver

    async def resume(self, *, ref: str) -> api.TurnReport:
        """Continue what was cut off or parked: an interrupted turn, else a waiting one."""
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
            self._check_may_run(held)
            try:
                turn = await self._resume_open_turns(held)
                if turn is None and held.projection.heinzel["waiting_turn"]:
                    turn = str(held.projection.heinzel["waiting_turn"])
                    await self._resume_turn(held, turn, "asked")
            except _Stopped as stopped:
                turn = stopped.turn
        return await self.turn_report(heinzel_id, turn)

    async def resume_waiting(self, heinzel_id: str, turn: str, woken_by: WokenBy) -> None:
        """The tick's entry: a waiting turn whose time came or whose condition holds."""
        async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
            if held.projection.turns.get(turn, {}).get("status") == "waiting":
                with contextlib.suppress(_Stopped):
                    await self._resume_turn(held, turn, woken_by)

    async def skip_wakes(
        self,
        heinzel_id: str,
        wakes: list[Wake],
        *,
        reason: SkipReason,
        moved: list[str],
        holder: str | None = None,
    ) -> str | None:
        """One ``turn.skipped`` line for wakes where nothing needs doing: no body, no model."""
        async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
            fresh = [w for w in wakes if w.key not in held.projection.keys]
            if not fresh:
                return None
            turn = str(ULID())
            await held.append(
                TurnSkipped(
                    causes=[w.cause for w in fresh],
                    keys=[w.key for w in fresh],
                    reason=reason,
                    moved=moved,
                    holder=holder,
                ),
                turn=turn,
                key=fresh[0].key,
            )
            return turn

    # -- the conversation ------------------------------------------------------------------

    def _admit(
        self, heinzel_id: str, request: InboxRequest, *, durable: bool = True
    ) -> InboxRequest:
        check_request_id(request.request_id)
        stored, _ = Inbox(self.home.heinzel_dir(heinzel_id)).admit(request, durable=durable)
        return stored

    @contextlib.asynccontextmanager
    async def _admitting(
        self, row: Mapping[str, Any], request: InboxRequest, *, defer: bool = False
    ) -> AsyncIterator[tuple[InboxRequest, HeldSession | None]]:
        """Admit ``request`` with the spine held, after refusing what may not run now.

        A refused request leaves nothing in the inbox. When another process
        holds the spine, the index's row is checked instead, the request is
        admitted all the same and ``None`` comes back for the session: it is
        queued, and the next tick (of whichever process holds the spine then)
        delivers it. The session stays held for the caller's block, so no
        other process can take the spine between admission and delivery.
        ``defer``: a request this process will journal itself is written without
        fsync; the caller settles it (``_settle``) before it answers.
        """
        heinzel_id = str(row["id"])
        async with contextlib.AsyncExitStack() as stack:
            try:
                held: HeldSession | None = await stack.enter_async_context(self.holding(heinzel_id))
            except SpineBusy:
                held = None
            self._check_row(row if held is None else held.projection.heinzel)
            durable = not defer or held is None or self.draining
            yield self._admit(heinzel_id, request, durable=durable), held

    async def wake(self, *, ref: str, request_id: str | None = None) -> api.TurnReport:
        """Run a turn now (cause ``asked``), keyed by a request admitted to the inbox first.

        A heinzel whose spine another process holds gets the wake queued
        (status ``queued``): the next tick runs it. A long-lived kernel
        answers once the wake's fate is known: its turn ``started`` (admitted),
        ``waiting`` for a turn slot (``reason`` capacity or low-memory), or
        ``requested`` behind the heinzel's running turn (``turn`` names it).
        """
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        asked = InboxRequest(request_id=request_id or str(ULID()), heinzel=heinzel_id, kind="wake")
        async with self._admitting(row, asked, defer=True) as (request, held):
            if held is None or self.draining:  # draining: the next daemon runs it
                return api.TurnReport(heinzel=heinzel_id, turn=None, status="queued")
            wake = Wake(
                cause="asked",
                key=request_key(heinzel_id, request.request_id),
                request_id=request.request_id,
            )
            told = _Told(wake.key, asyncio.get_running_loop().create_future())
            telling = _TOLD.set(told)
            try:
                turn = await self._in_background(
                    heinzel_id, lambda: self.run_wakes(heinzel_id, [wake])
                )
            except BaseException:
                self._settle(heinzel_id, wake)
                raise
            finally:
                _TOLD.reset(telling)
        if self.long_lived:
            answer = await told.answer
            self._settle(heinzel_id, wake)
            if isinstance(answer, api.TurnReport):
                return answer
            if answer is None:  # no turn ran: a drain came first (the next daemon runs it)
                status = "queued" if self.draining else "none"
                return api.TurnReport(heinzel=heinzel_id, turn=None, status=status)
            turn = answer
        else:
            self._settle(heinzel_id, wake)
        return await self.turn_report(heinzel_id, turn)

    def _settle(self, heinzel_id: str, wake: Wake) -> None:
        """Before a wake is answered, its request is durable: in the spine (a ``turn.started``
        or ``turn.requested`` naming it, folded only once durable), else its file is synced.
        A turn that starts at once records it first, so its file is never synced."""
        held = self.sessions.get(heinzel_id)
        if held is not None and (
            wake.key in held.projection.keys or wake.request_id in held.projection.requests
        ):
            return
        assert wake.request_id is not None
        Inbox(self.home.heinzel_dir(heinzel_id)).settle(wake.request_id)

    async def chat(
        self,
        *,
        ref: str,
        message: str,
        mode: Literal["steer", "queue"] = "queue",
        request_id: str | None = None,
    ) -> api.Admitted:
        """A message to a heinzel: steers a running think, else becomes a turn (now or next).

        A heinzel whose spine another process holds gets the message queued
        (status ``queued``): the next tick delivers it.
        """
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        sent = InboxRequest(
            request_id=request_id or str(ULID()),
            heinzel=heinzel_id,
            kind="chat",
            mode=mode,
            message=message,
        )
        async with self._admitting(row, sent) as (request, held):
            if held is None or self.draining:
                return api.Admitted(
                    request_id=request.request_id,
                    heinzel=heinzel_id,
                    mode=request.mode,
                    status="queued",
                )
            return await self._deliver_chat(held, request)

    async def _deliver_chat(self, held: HeldSession, request: InboxRequest) -> api.Admitted:
        """An admitted message, with its spine held: to the running turn, else a turn now."""
        heinzel_id = held.id
        key = request_key(heinzel_id, request.request_id)
        running = self._running.get(heinzel_id)
        if running is not None:
            delivered = held.projection.requests.get(request.request_id)
            if delivered is None:
                step = held.projection.turns.get(running.turn, {}).get("step")
                if request.mode == "steer" and step in (None, "gather"):
                    return api.Admitted(
                        request_id=request.request_id,
                        heinzel=heinzel_id,
                        mode=request.mode,
                        status="pending",
                        turn=running.turn,
                    )
                await held.append(
                    TurnRequested(cause="asked", key=key, request_id=request.request_id),
                    turn=running.turn,
                )
            status = held.projection.requests[request.request_id]["status"]
            return api.Admitted(
                request_id=request.request_id,
                heinzel=heinzel_id,
                mode=request.mode,
                status=str(status),
                turn=running.turn,
            )
        wake = Wake(cause="asked", key=key, request_id=request.request_id)
        turn = await self._in_background(heinzel_id, lambda: self.run_wakes(heinzel_id, [wake]))
        return api.Admitted(
            request_id=request.request_id,
            heinzel=heinzel_id,
            mode=request.mode,
            status="delivered" if turn else "pending",
            turn=turn,
        )

    async def inbox(self, *, ref: str) -> api.InboxList:
        """The heinzel's requests, newest last, with what became of each."""
        row = await self.resolve(ref)
        delivered = {
            r["request_id"]: r["status"] for r in await self.index.rows_of("requests", row["id"])
        }
        requests, refused = Inbox(self.home.heinzel_dir(row["id"])).scan()
        items = [_inbox_item(r, delivered.get(r.request_id, "pending")) for r in requests]
        return api.InboxList(items=items, skipped=[exc.one_line() for exc in refused])

    async def stop(self, *, ref: str, hand_back: bool = False) -> api.TurnReport:
        """Cancel the running step; the turn ends abandoned (``stopped``).

        The queue stays as the next turn's input, unless ``hand_back``: then,
        under the turn lock (before any follow-up turn can start), the chat
        messages still waiting and those steered into the stopped turn are
        withdrawn from the inbox and answered in ``handed_back``.
        """
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        runner = self._running.get(heinzel_id)
        if runner is not None and runner.task is not None:
            runner.stopping = True
            runner.task.cancel()
            async with self._turn_lock(heinzel_id):
                given = await self._hand_back(heinzel_id, runner.turn) if hand_back else []
            report = await self.turn_report(heinzel_id, runner.turn)
            return report.model_copy(update={"handed_back": given})
        async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
            open_turns = [t for t, r in held.projection.turns.items() if r["status"] == "running"]
            for turn in open_turns:
                state = _load_state(held, turn)
                if state is not None:
                    await _runner(self, held).abandon(state, "stopped")  # type: ignore[arg-type]
            given = _withdraw(held, open_turns[-1]) if hand_back and open_turns else []
        if not open_turns:
            # Not ``turn_report``: on a daemon, a report of no turn yet is a wake's "started".
            return api.TurnReport(heinzel=heinzel_id, turn=None, status="none")
        report = await self.turn_report(heinzel_id, open_turns[-1])
        return report.model_copy(update={"handed_back": given})

    async def _hand_back(self, heinzel_id: str, turn: str) -> list[api.InboxItem]:
        async with self.holding(heinzel_id) as held:
            return _withdraw(held, turn)

    async def retry(
        self, *, ref: str, hint: str | None = None, request_id: str | None = None
    ) -> api.TurnReport:
        """A new turn forked from the last one after gather, with the user's hint."""
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        turns = [
            t
            for t in await self.index.rows_of("turns", heinzel_id)
            if t["status"] == "finished" and t["disposition"] != "skipped"
        ]
        if not turns:
            raise UsageError("HZU050", "there is no finished turn to retry", row["name"])
        parent = str(turns[-1]["turn"])
        async with self.holding(heinzel_id):  # a spine held elsewhere refuses before admission
            request = self._admit(
                heinzel_id,
                InboxRequest(
                    request_id=request_id or str(ULID()),
                    heinzel=heinzel_id,
                    kind="retry",
                    message=hint or "",
                ),
            )
        wake = Wake(
            cause="retry",
            key=retry_key(heinzel_id, parent, request.request_id),
            request_id=request.request_id,
        )
        turn = await self._in_background(
            heinzel_id,
            lambda: self.run_wakes(heinzel_id, [wake], parent_turn=parent, from_step="gather"),
        )
        return await self.turn_report(heinzel_id, turn)

    async def answer(
        self, *, ref: str, message: str, request_id: str | None = None
    ) -> api.TurnReport:
        """Answer the pending question; a turn waiting on it resumes, else a new turn runs."""
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        key = row["pending_question"]
        if not key:
            raise UsageError(
                "HZU051", "no question of this heinzel waits for an answer", row["name"]
            )
        async with self.holding(heinzel_id):  # a spine held elsewhere refuses before admission
            request = self._admit(
                heinzel_id,
                InboxRequest(
                    request_id=request_id or str(ULID()),
                    heinzel=heinzel_id,
                    kind="answer",
                    message=message,
                    question_key=key,
                ),
            )

        async def work() -> str | None:
            async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
                if held.projection.questions.get(key, {}).get("status") != "answered":
                    await held.append(
                        QuestionAnswered(
                            key=key, request_id=request.request_id, hash=_hash(request.message)
                        )
                    )
                waiting = held.projection.heinzel["waiting_turn"]
                on = held.projection.heinzel["waiting_on"] or {}
                if waiting and on.get("kind") == "answer" and on.get("key") == key:
                    with contextlib.suppress(_Stopped):
                        await self._resume_turn(held, str(waiting), "answer")
                    return str(waiting)
            wake = Wake(
                cause="asked",
                key=request_key(heinzel_id, request.request_id),
                request_id=request.request_id,
            )
            return await self.run_wakes(heinzel_id, [wake])

        turn = await self._in_background(heinzel_id, work)
        return await self.turn_report(heinzel_id, turn)

    async def dismiss(self, *, ref: str, lesson_id: str) -> api.Decision:
        """Dismiss a lesson: kept and marked, never shown to the model again."""
        row = await self.resolve(ref)
        async with self.holding(row["id"]) as held:
            lesson = held.projection.lessons.get(lesson_id)
            if lesson is None:
                raise UsageError("HZU052", "no lesson with that id", lesson_id)
            if not lesson["dismissed"]:
                await held.append(LessonDismissed(lesson_id=lesson_id))
            return api.Decision(
                heinzel=held.id, what="dismiss", state=str(held.projection.heinzel["state"])
            )

    async def forget(self, *, ref: str, turn: str, instead: str | None = None) -> api.Decision:
        """Keep a turn out of what the model sees from now on (``context.edit``; ``instead``:
        a line the model reads in its place). The spine and the body keep everything."""
        row = await self.resolve(ref)
        async with self.holding(row["id"]) as held:
            events = held.scan.events
            if not any(event.turn == turn for event in events):
                raise UsageError(
                    "HZU242", f"{held.projection.heinzel['name']} has no such turn", turn
                )
            edits = [e for e in events if e.kind == "context.edit" and e.data.get("target") == turn]
            changed = not edits or edits[-1].data.get("replacement") != instead
            if changed:
                await held.append(ContextEdit(target=turn, replacement=instead))
            return api.Decision(
                heinzel=held.id,
                what="forget" if changed else "forget: already so",
                state=str(held.projection.heinzel["state"]),
            )

    # -- drafts and approvals ----------------------------------------------------------------

    async def drafts(self) -> api.DraftList:
        """Every draft waiting for the user, oldest first (``hz drafts``)."""
        rows = await self.index.fetch(
            "drafts",
            "SELECT d.*, h.name AS heinzel_name FROM drafts d JOIN heinzels h ON h.id = d.heinzel "
            "WHERE d.status = 'pending' ORDER BY d.placed_at, d.key",
        )
        return api.DraftList(items=[api.DraftSummary.model_validate(r) for r in rows])

    async def _draft(self, key: str) -> dict[str, object] | None:
        rows = await self.index.fetch(
            "drafts",
            "SELECT d.*, h.name AS heinzel_name FROM drafts d JOIN heinzels h ON h.id = d.heinzel "
            "WHERE d.key = ?",
            (key,),
        )
        return rows[0] if rows else None

    def _draft_path(self, asset: str) -> tuple[Path, str | None]:
        path, _, anchor = asset.removeprefix("doc:").partition("#")
        return self.home.settings.documents.resolve(path), anchor or None

    async def draft_diff(self, *, key: str) -> api.DraftDiff:
        """The draft as placed next to the document's text now, for review."""
        draft = await self._draft(key)
        if draft is None:
            raise UsageError("HZU053", "no draft with that key", key[:120])
        heinzel_id = str(draft["heinzel"])
        placed = next(
            (
                str(r.get("text", ""))
                for r in read_body(self.home.heinzel_dir(heinzel_id), str(draft["turn"])) or []
                if r.get("type") == "draft" and r.get("key") == key
            ),
            "",
        )
        path, _ = self._draft_path(str(draft["asset"]))
        state = MarkdownDocuments().draft_state(path, key, placed_text=placed)
        return api.DraftDiff(
            key=key,
            heinzel=heinzel_id,
            heinzel_name=str(draft["heinzel_name"]),
            asset=str(draft["asset"]),
            path=str(path),
            status=state.status.value,
            placed_text=placed,
            current_text=state.text or "",
        )

    async def _named(self, ref: str, verb: Verb) -> tuple[str, WaitingItem]:
        """The heinzel and the one waiting item a ref names: a draft key, else see ``waiting``."""
        draft = await self._draft(ref)
        if draft is not None:
            heinzel_id = str(draft["heinzel"])
            return heinzel_id, WaitingItem("draft", ref, short_key(heinzel_id, ref))
        row, item = await resolve_waiting(self, ref, verb)
        return str(row["id"]), item

    async def approve(self, *, ref: str, approver: str = "owner") -> api.Decision:
        """Approve what ``ref`` names: a draft (learning from the edit), a contract, amendment."""
        heinzel_id, item = await self._named(ref, "approve")
        if item.kind != "draft":
            exact = f"{heinzel_id}@{item.short}"
            return await super().approve(ref=exact, approver=approver)  # type: ignore[misc]
        draft = await self._draft(item.key)
        assert draft is not None
        if draft["status"] in ("approved", "superseded"):
            row = await self.index.heinzel(heinzel_id)
            return api.Decision(
                heinzel=heinzel_id,
                what="draft",
                state=str(row and row["state"]),
                already=draft["status"],  # type: ignore[arg-type]
            )
        await self._check_intact(heinzel_id)
        path, _ = self._draft_path(str(draft["asset"]))
        MarkdownDocuments().approve_draft(path, item.key)
        await self._learn_from(heinzel_id, item.key)
        row = await self.index.heinzel(heinzel_id)
        return api.Decision(heinzel=heinzel_id, what="draft", state=str(row and row["state"]))

    async def reject(
        self, *, ref: str, reason: str | None = None, request_id: str | None = None
    ) -> api.Decision:
        """Reject a draft (its section is removed) or decline an amendment.

        A rejection teaches nothing by itself: the deleted text is never learned
        from. A draft's ``reason`` is admitted to the inbox and runs one learning
        turn (cause ``approval``) that sees the reason alone; it may become a
        writing lesson. An amendment is no draft: its reason is kept on
        ``amendment.declined`` (the heinzel's history shows it) and teaches no lesson.
        """
        heinzel_id, item = await self._named(ref, "reject")
        await self._check_intact(heinzel_id)
        draft = await self._draft(item.key) if item.kind == "draft" else None
        if draft is not None and draft["status"] != "pending":
            # Its section is the user's text now (or gone): a reject must never delete it.
            raise UsageError("HZU038", f"that draft is {draft['status']}, not pending", ref)
        request = (
            self._admit(
                heinzel_id,
                InboxRequest(
                    request_id=request_id or str(ULID()),
                    heinzel=heinzel_id,
                    kind="reject",
                    message=reason,
                ),
            )
            if draft is not None and reason and reason.strip()
            else None
        )
        if draft is not None:
            path, _ = self._draft_path(str(draft["asset"]))
            MarkdownDocuments().remove_draft(path, item.key)
            await self._learn_from(heinzel_id, item.key)
        else:
            await super().reject(  # type: ignore[misc]
                ref=f"{heinzel_id}@{item.short}", reason=reason
            )
        row = await self.index.heinzel(heinzel_id)
        if request is not None and row and not (row["paused"] or row["retired"]):
            wake = Wake(
                cause="approval",
                key=f"{heinzel_id}@approval:{item.key}",
                request_id=request.request_id,
            )
            await self._in_background(heinzel_id, lambda: self.run_wakes(heinzel_id, [wake]))
            row = await self.index.heinzel(heinzel_id)
        return api.Decision(
            heinzel=heinzel_id,
            what="draft" if item.kind == "draft" else "amendment",
            declined=True,
            state=str(row and row["state"]),
        )

    async def _check_intact(self, heinzel_id: str) -> None:
        """Refuse a decision on a damaged spine before the document changes (none is recorded)."""
        async with self.holding(heinzel_id) as held:
            if held.damaged:
                self._check_row(held.projection.heinzel)

    async def _learn_from(self, heinzel_id: str, key: str) -> str | None:
        """Record what the user did with a draft; an approval runs the learning turn.

        A draft whose section (or all its text) is gone is rejected: that is
        recorded, and no turn runs, since the deleted text must teach nothing.
        """
        async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
            draft = held.projection.drafts.get(key) or {}
            if draft.get("status") != "pending":
                return None
            if any(t["status"] == "running" for t in held.projection.turns.values()):
                return None  # an interrupted turn may be replacing this draft: settle it first
            path, _ = self._draft_path(str(draft.get("asset")))
            seen = MarkdownDocuments().draft_state(path, key, placed_text="")
            if seen.status in (DraftStatus.REJECTED, DraftStatus.MISSING):
                await held.append(DraftRejected(key=key))
                return None
        wake = Wake(cause="approval", key=f"{heinzel_id}@approval:{key}")
        return await self._in_background(heinzel_id, lambda: self.run_wakes(heinzel_id, [wake]))

    async def observe_drafts(self, pending: list[tuple[str, str]]) -> list[str]:
        """Approvals and rejections the user made in the documents themselves.

        The tick passes each heinzel's pending draft key; a draft whose tag line
        is gone (approved) or whose section is gone (rejected) gets its learning
        turn. Reading the document is the only cost.
        """
        noticed: list[str] = []
        for heinzel_id, key in pending:
            asset = key.split("@", 3)[-1]
            path, _ = self._draft_path(asset)
            found = MarkdownDocuments().find(path, key)
            if found is None or not found.pending:
                await self._learn_from(heinzel_id, key)
                noticed.append(key)
        return noticed

    async def turn_report(self, heinzel_id: str, turn: str | None) -> api.TurnReport:
        rows = await self.index.fetch(
            "turns", "SELECT * FROM turns WHERE heinzel = ? AND turn = ?", (heinzel_id, turn)
        )
        if not rows:
            return api.TurnReport(
                heinzel=heinzel_id,
                turn=turn,
                status="started" if turn is None and self.long_lived else "none",
            )
        return api.TurnReport.model_validate({**rows[0], "heinzel": heinzel_id})


@dataclass(frozen=True)
class _Told:
    """What a wake in a long-lived kernel waits for: the fate of the turn for its ``key``.

    Its background task inherits this (a context variable), and the first of
    these settles it: the turn admitted or made to wait, the heinzel's running
    turn taking the wake as a follow-up (or having taken it already), or the
    task ending (the turn it ran).
    """

    key: str
    answer: asyncio.Future[api.TurnReport | str | None]

    def settle(self, answer: api.TurnReport | str | None) -> None:
        if not self.answer.done():
            self.answer.set_result(answer)


_TOLD: contextvars.ContextVar[_Told | None] = contextvars.ContextVar("hz_wake_told", default=None)


def _tell_turn(
    heinzel_id: str, turn: str, keys: list[str], status: str, reason: str | None = None
) -> None:
    """A turn was admitted or made to wait: the wake's own, or one it must wait behind."""
    told = _TOLD.get()
    if told is None:
        return
    if told.key in keys:
        told.settle(api.TurnReport(heinzel=heinzel_id, turn=turn, status=status, reason=reason))
    else:
        _tell_behind(heinzel_id, turn)


def _tell_behind(heinzel_id: str, turn: str | None) -> None:
    """The wake waits for the heinzel's running turn (``turn``, when known) to end."""
    told = _TOLD.get()
    if told is not None:
        told.settle(api.TurnReport(heinzel=heinzel_id, turn=turn, status="requested"))


def _tell_took(turn: str | None) -> None:
    """The turn that took the wake (a request sent again), or what its background work
    ended with before telling (a key already done; None: a refusal, a drain)."""
    told = _TOLD.get()
    if told is not None:
        told.settle(turn)


class _Stopped(Exception):
    """A turn ended by ``stop``: no follow-up turn runs; the queue waits for the user."""

    def __init__(self, turn: str) -> None:
        super().__init__(turn)
        self.turn = turn


_log = logging.getLogger("hz.turns")


def _seconds_since(moment: datetime, now: datetime) -> float:
    """Seconds from ``moment`` to ``now`` on the kernel's clock (never negative if it stepped)."""
    return round(max(0.0, (now - moment).total_seconds()), 3)


def _withdraw(held: HeldSession, turn: str) -> list[api.InboxItem]:
    """Withdraw the chat messages a stopped ``turn`` leaves: those no turn took yet (pending
    or requested) and those steered into it (it came to nothing, so they were not answered)."""
    requests = held.projection.requests
    inbox = Inbox(held.dir)
    chosen: dict[str, str] = {}
    for request in inbox.all():
        if request.kind != "chat":
            continue
        row = requests.get(request.request_id) or {}
        status = str(row.get("status") or "pending")
        if status in ("pending", "requested") or (status == "steered" and row["turn"] == turn):
            chosen[request.request_id] = status
    withdrawn = inbox.withdraw([r for r in inbox.all() if r.request_id in chosen])
    return [_inbox_item(request, chosen[request.request_id]) for request in withdrawn]


def _inbox_item(request: InboxRequest, status: str) -> api.InboxItem:
    """A request as the inbox lists it, with what became of it."""
    return api.InboxItem(
        request_id=request.request_id,
        kind=request.kind,
        mode=request.mode,
        message=request.message,
        admitted_at=request.admitted_at,
        status=status,
    )


def _uncancel() -> None:
    """A stop cancelled this task to reach a waiting turn; the turn is ended, not the task."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
