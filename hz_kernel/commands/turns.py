"""Turn commands: run wakes (coalesced, idempotent by key), skip them, wake now, list drafts."""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict
from typing import TYPE_CHECKING

from ulid import ULID

from hz_kernel import api
from hz_kernel.core import KernelCore
from hz_kernel.engine.wakes import Wake, request_key
from hz_kernel.errors import HzError, UsageError
from hz_kernel.store.inbox import Inbox, InboxRequest, check_request_id
from hz_kernel.store.session import HeldSession
from hz_kernel.vocabulary import SkipReason, TurnSkipped, TurnSteered

if TYPE_CHECKING:
    from hz_kernel.engine.turn import TurnRunner


def _runner(kernel: KernelCore, held: HeldSession) -> TurnRunner:
    """A turn runner. Imported here, not at the top: the engine pulls in pydantic-ai, whose
    import costs more than a second, and listings and other reads must not pay for it."""
    from hz_kernel.engine.turn import TurnRunner

    return TurnRunner(kernel, held)


def _load_state(held: HeldSession, turn: str) -> object:
    from hz_kernel.engine.turn import load_state

    return load_state(held.scan.events, turn)


class TurnCommands(KernelCore):
    """``hz heinzel wake``, ``hz drafts``, and the engine's entry for the tick."""

    _turn_locks: defaultdict[str, asyncio.Lock]

    def _turn_lock(self, heinzel_id: str) -> asyncio.Lock:
        if not hasattr(self, "_turn_locks"):
            self._turn_locks = defaultdict(asyncio.Lock)
        return self._turn_locks[heinzel_id]

    async def run_wakes(self, heinzel_id: str, wakes: list[Wake]) -> str | None:
        """Run one turn for these wakes; resumes an interrupted turn first.

        Keys whose turn already finished or was skipped are dropped; if none
        is left, nothing runs and the last turn's id comes back.
        """
        async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
            self._check_may_run(held)
            last = await self._resume_open_turns(held)
            keys = held.projection.keys
            fresh = [w for w in wakes if w.key not in keys]
            if not fresh:
                done = [keys[w.key]["turn"] for w in wakes if w.key in keys]
                return done[-1] if done else last
            runner = _runner(self, held)
            runner.steer = self._steering(held, lambda: state.turn)  # type: ignore[assignment]
            request_ids = [w.request_id for w in fresh if w.request_id]
            state = await runner.start(str(ULID()), fresh, request_ids=request_ids)
            await runner.run(state)
            return state.turn

    def _check_may_run(self, held: HeldSession) -> None:
        row = held.projection.heinzel
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

    async def _resume_open_turns(self, held: HeldSession) -> str | None:
        last = None
        for turn_id, turn in list(held.projection.turns.items()):
            if turn["status"] == "running":
                await self._resume_turn(held, turn_id, "restart")
                last = turn_id
        return last

    def _steering(self, held: HeldSession, current_turn: object) -> object:
        """The think step's steering queue: pending ``steer`` requests, journalled on delivery."""

        async def deliver() -> list[str]:
            turn = current_turn()  # type: ignore[operator]
            delivered = held.projection.requests
            texts: list[str] = []
            for request in Inbox(held.dir).all():
                if request.mode != "steer" or request.kind != "chat":
                    continue
                if request.request_id in delivered:
                    continue
                await held.append(
                    TurnSteered(
                        request_id=request.request_id,
                        hash=hashlib.sha256(request.message.encode()).hexdigest(),
                    ),
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
            turn = await self._resume_open_turns(held)
            if turn is None and held.projection.heinzel["waiting_turn"]:
                turn = str(held.projection.heinzel["waiting_turn"])
                await self._resume_turn(held, turn, "asked")
        return await self.turn_report(heinzel_id, turn)

    async def _resume_turn(self, held: HeldSession, turn: str, woken_by: str) -> None:
        state = _load_state(held, turn)
        if state is None:
            return
        runner = _runner(self, held)
        runner.steer = self._steering(held, lambda: turn)  # type: ignore[assignment]
        resumed = await runner.resume(state, woken_by)  # type: ignore[arg-type]
        if resumed is not None:
            await runner.run(resumed)

    async def skip_wakes(
        self, heinzel_id: str, wakes: list[Wake], *, reason: SkipReason, moved: list[str]
    ) -> str:
        """One ``turn.skipped`` line for wakes where nothing needs doing: no body, no model."""
        async with self._turn_lock(heinzel_id), self.holding(heinzel_id) as held:
            fresh = [w for w in wakes if w.key not in held.projection.keys]
            turn = str(ULID())
            if fresh:
                await held.append(
                    TurnSkipped(
                        causes=[w.cause for w in fresh],
                        keys=[w.key for w in fresh],
                        reason=reason,
                        moved=moved,
                    ),
                    turn=turn,
                    key=fresh[0].key,
                )
            return turn

    async def wake(self, *, ref: str, request_id: str | None = None) -> api.TurnReport:
        """Run a turn now (cause ``asked``), keyed by a request admitted to the inbox first."""
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        request_id = check_request_id(request_id or str(ULID()))
        Inbox(self.home.heinzel_dir(heinzel_id)).admit(
            InboxRequest(request_id=request_id, heinzel=heinzel_id, kind="wake")
        )
        wake = Wake(cause="asked", key=request_key(heinzel_id, request_id), request_id=request_id)
        turn = await self.run_wakes(heinzel_id, [wake])
        return await self.turn_report(heinzel_id, turn)

    async def turn_report(self, heinzel_id: str, turn: str | None) -> api.TurnReport:
        rows = await self.index.fetch(
            "turns", "SELECT * FROM turns WHERE heinzel = ? AND turn = ?", (heinzel_id, turn)
        )
        if not rows:
            return api.TurnReport(heinzel=heinzel_id, turn=turn, status="none")
        return api.TurnReport.model_validate({**rows[0], "heinzel": heinzel_id})

    async def drafts(self) -> api.DraftList:
        """Every draft waiting for the user, oldest first (``hz drafts``)."""
        rows = await self.index.fetch(
            "drafts",
            "SELECT d.*, h.name AS heinzel_name FROM drafts d JOIN heinzels h ON h.id = d.heinzel "
            "WHERE d.status = 'pending' ORDER BY d.placed_at, d.key",
        )
        return api.DraftList(items=[api.DraftSummary.model_validate(r) for r in rows])
