"""A turn: five journalled steps, effects through the ledger, resumable at every checkpoint.

``gather → think → outcome → act → finish``, one module each in ``engine/steps/``;
this runner walks them. Each step's ``step.done`` is durable before the next
starts, and its content is in the turn body (fsynced first). A process that
dies anywhere is resumed by the next run of the same key: finished steps are
not done again, their results are read back from the body; an effect whose
``effect.started`` has no outcome is looked up by key instead of performed
again; a model request that had streamed output is never rerun
(``engine_restart_mid_stream``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import TypeAdapter

from hz_kernel.adapters.documents import MarkdownDocuments
from hz_kernel.adapters.models import ModelEnv
from hz_kernel.adapters.sources import default_registry
from hz_kernel.clock import now_utc
from hz_kernel.contracts import CompiledContract, ContractVersions
from hz_kernel.engine.outcome import Outcome
from hz_kernel.engine.state import TurnState, timeout_s
from hz_kernel.engine.steps.act import act
from hz_kernel.engine.steps.finish import disposition_of, finish
from hz_kernel.engine.steps.gather import gather
from hz_kernel.engine.steps.outcome import record_outcome
from hz_kernel.engine.steps.think import think
from hz_kernel.engine.summary import summarise_if_due
from hz_kernel.engine.wakes import Wake
from hz_kernel.errors import HzError
from hz_kernel.store.bodies import BodyWriter, read_body
from hz_kernel.store.session import HeldSession
from hz_kernel.tick.cache import SourceCache
from hz_kernel.vocabulary import TurnResumed, TurnStarted

if TYPE_CHECKING:
    from hz_kernel.core import KernelCore

_OUTCOME = TypeAdapter(Outcome)


class Drained(Exception):
    """The kernel drains: the turn stops at a step boundary, open, as a resumable checkpoint."""


class TurnRunner:
    """Runs one turn of one heinzel while its session (and lock) is held.

    The steps share what it holds: the session, the turn body being written, the
    pinned contract and the adapters.
    """

    def __init__(self, kernel: KernelCore, held: HeldSession) -> None:
        self.kernel = kernel
        self.held = held
        self.settings = kernel.home.settings
        self.documents = MarkdownDocuments()
        self.cache = SourceCache(kernel.home.sources_dir)
        self.sources = default_registry(
            base_dir=Path(self.settings.documents.root).expanduser(),
            heinzel_root=kernel.home.heinzel_root,
            home=kernel.home.root,
        )
        self.body: BodyWriter | None = None
        self.started_clock = time.monotonic()
        self.steer: Callable[[], Awaitable[list[str]]] | None = None
        self._pinned: CompiledContract | None = None
        self.stopping = False
        self.turn = ""
        self.task: asyncio.Task[object] | None = None
        self.state: TurnState | None = None
        """The turn as it runs (its step and cost so far, for the kernel's status)."""
        self.env = ModelEnv.from_environ()
        self._assets: dict[str, tuple[Path, str | None]] = {}

    # -- entry points --------------------------------------------------------------------

    async def start(
        self,
        turn: str,
        wakes: list[Wake],
        *,
        request_ids: list[str],
        parent_turn: str | None = None,
        from_step: str | None = None,
        deadline: datetime | None = None,
    ) -> TurnState:
        """``turn.started``; ``deadline`` (default: now + the timeout) came with the wake, so
        time spent queued for admission counts against it."""
        row = self.held.projection.heinzel
        self.started_clock = time.monotonic()
        deadline = deadline or now_utc() + timedelta(seconds=self.settings.heinzel.turn_timeout_s)
        token = await self.kernel.lease_token(self.held.id, row)
        started = await self.held.append(
            TurnStarted(
                cause=wakes[0].cause,
                causes=[w.cause for w in wakes],
                keys=[w.key for w in wakes],
                contract_version=int(row["contract_version"]),
                lessons_seq=int(row["lessons_seq"] or 0),
                request_ids=request_ids,
                parent_turn=parent_turn,
                from_step=from_step,  # type: ignore[arg-type]
                deadline=deadline,
                token=token,
            ),
            turn=turn,
            key=wakes[0].key,
        )
        return TurnState(turn=turn, started=started)

    async def resume(self, state: TurnState, woken_by: str = "restart") -> TurnState | None:
        """Continue an open turn, or end it abandoned when it resumed too often or overran.

        The timeout counts running time (``TurnState.ran_s``): a turn that was
        down for an hour after a crash, or waited a week, has not overrun.
        """
        step = state.done[-1] if state.done else None
        if state.resumes >= self.settings.heinzel.max_resumes:
            await finish(
                self, state, "abandoned", reason=f"resumed {state.resumes} times", step=step
            )
            return None
        if state.ran_s > timeout_s(state, self.settings.heinzel.turn_timeout_s):
            await finish(self, state, "abandoned", reason="timeout", step=step)
            return None
        waited = woken_by != "restart"
        if waited:
            state.done = [s for s in state.done if s == "gather"]
            state.outcome = None
        await self.held.append(
            TurnResumed(woken_by=woken_by, resumes=state.resumes + 1),  # type: ignore[arg-type]
            turn=state.turn,
        )
        self.started_clock = time.monotonic()
        state.resumes += 1
        return state

    async def abandon(self, state: TurnState, reason: str) -> str:
        """End an open turn this process is not running (``stop`` after a crash)."""
        return await finish(
            self, state, "abandoned", reason=reason, step=state.done[-1] if state.done else None
        )

    async def run(self, state: TurnState) -> str:
        """Walk the remaining steps; returns the disposition (or ``waited``)."""
        self.body = BodyWriter(self.held.dir, state.turn)
        self.state = state
        self.held.before_flush = self.body.sync
        try:
            return await self._walk(state)
        except Drained:
            return "drained"
        except asyncio.CancelledError:
            if not self.stopping:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return await finish(
                self,
                state,
                "abandoned",
                reason="stopped",
                step=state.done[-1] if state.done else None,
            )
        finally:
            try:
                self.held.index_later = False
                await self.held.flush()
                await self.held.publish()
            finally:
                self.held.before_flush = None
                self.body.close()
                self.body = None

    async def _walk(self, state: TurnState) -> str:
        """The remaining steps. Each boundary yields to the event loop, so a message, a
        wake or a stop that arrived meanwhile is taken in between two steps; a draining
        kernel ends the walk there, the turn left open for the next start to resume."""
        assert self.body is not None
        if self.body.size == 0 and "think" in state.done and "act" not in state.done:
            # The body was deleted: the inputs and the outcome are gone. Those steps are
            # replay-safe, so they run again rather than acting on nothing.
            state.done = []
        self._reload(state)
        try:
            await self._boundary()
            if "gather" not in state.done:
                if await gather(self, state):
                    return "waited"
                await self._boundary()
            if "think" not in state.done:
                disposition = await think(self, state)
                if disposition is not None:
                    return disposition
                await self._boundary()
            if "outcome" not in state.done:
                await record_outcome(self, state)
                await self._boundary()
            if "act" not in state.done:
                waited = await act(self, state)
                if waited:
                    return "waited"
                await self._boundary()
            await summarise_if_due(self, state)
        except HzError as exc:
            step = state.done[-1] if state.done else None
            return await finish(self, state, "failed", reason=exc.one_line()[:500], step=step)
        return await finish(self, state, disposition_of(state.outcome), report=state.report)

    async def _boundary(self) -> None:
        """Between two steps: let what arrived run, and stop here, the turn open at its
        checkpoint, when the kernel drains (a restart, or a cockpit handing its turns to the
        daemon): the next kernel resumes it from there."""
        await asyncio.sleep(0)
        if self.kernel.draining:
            raise Drained

    def _reload(self, state: TurnState) -> None:
        """The inputs and the outcome of finished steps, read back from the body (a new
        turn's body holds nothing yet: it is not read)."""
        assert self.body is not None
        records = (read_body(self.held.dir, state.turn) or []) if self.body.size else []
        state.inputs = [r for r in records if r.get("type") == "input"]
        outcomes = [r for r in records if r.get("type") == "outcome"]
        if outcomes:
            state.outcome = _OUTCOME.validate_python(outcomes[-1]["outcome"])

    # -- what the steps share ------------------------------------------------------------

    def contract(self, state: TurnState) -> CompiledContract:
        """The contract version the turn started with (a resumed turn keeps it)."""
        if self._pinned is None:
            read = self.held.contracts
            if state.version not in read:
                read[state.version] = ContractVersions(self.held.dir).read(state.version)[1]
            self._pinned = read[state.version]
        return self._pinned

    def resolve_asset(self, asset: str) -> tuple[Path, str | None]:
        """The document path and section anchor a ``doc:`` asset names (resolved once a turn:
        the steps ask for the same assets several times)."""
        found = self._assets.get(asset)
        if found is None:
            path, _, anchor = asset.removeprefix("doc:").partition("#")
            found = self._assets[asset] = (self.settings.documents.resolve(path), anchor or None)
        return found

    def admit_attempt(self) -> contextlib.AbstractAsyncContextManager[object]:
        """A model request waits for one of the kernel's attempt slots."""
        return self.kernel.admission.attempt(self.held.id)
