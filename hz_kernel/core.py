"""The kernel's core: the home, the index and the sessions it holds.

The kernel is the only writer of spines. It holds a heinzel's session
(lock, writer, projection) while it works on it and answers every read
from the index. Command groups (``hz_kernel.commands``) build on this core;
``hz_kernel.kernel.Kernel`` puts them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import gc
import importlib
import itertools
import time
from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from typing import Any, Self

from ulid import ULID

from hz_kernel import api
from hz_kernel.clock import now_utc
from hz_kernel.daemon.admission import AdmissionController
from hz_kernel.errors import HzError, UsageError
from hz_kernel.home import Home
from hz_kernel.observe import Observation, Observer
from hz_kernel.store.envelope import Event
from hz_kernel.store.fsutil import store_io
from hz_kernel.store.index import (
    Index,
    IndexDamaged,
    SpineMark,
    SpineStat,
    stale_spines,
    stat_spine,
)
from hz_kernel.store.locks import FileLock, read_holder
from hz_kernel.store.positions import Spot, spots
from hz_kernel.store.projection import Projection
from hz_kernel.store.rebuild import (
    Folded,
    contradicts,
    fold_all,
    folded,
    interruptible,
    project_spine,
)
from hz_kernel.store.scan import SpineScan
from hz_kernel.store.session import HeldSession
from hz_kernel.store.spine import LOCK_NAME, SPINE_NAME
from hz_kernel.tick.schedule import SlotClock, user_zone
from hz_kernel.vocabulary import EventData, HeinzelCreated

#: The turn engine (pydantic-ai and the model adapters): seconds of imports.
ENGINE_MODULE = "hz_kernel.engine.runner"
#: The lock a process holds while it rebuilds the index (``KernelCore._building``).
INDEX_LOCK_NAME = "index.lock"
#: Seconds a rebuild waits for another process's rebuild of the same index.
REBUILD_WAIT_S = 60.0
_BUILD_POLL_S = 0.02


class KernelCore:
    """One home's kernel core. Open it with ``await Kernel.open(home)``; close it when done."""

    def __init__(self, home: Home, index: Index, *, long_lived: bool = False) -> None:
        self.home = home
        self.index = index
        self.sessions: dict[str, HeldSession] = {}
        self.long_lived = long_lived
        self.tasks: set[asyncio.Task[None]] = set()
        self.warnings: list[HzError] = []
        self.observers: list[Observer] = []
        self.runs_every_turn = False
        """Set in the daemon: every turn of the home runs in it (the CLI and cockpits go through
        it), so a turn open in a spine that it does not run is interrupted, not running."""
        self.draining = False
        """Set before a restart or a hand-off to the daemon: no turn or step starts, and running
        turns stop at their next step boundary, open at a checkpoint the next kernel resumes."""
        self._slot_clocks: dict[str, SlotClock] = {}
        self.opened_at = now_utc()
        self.warming: asyncio.Future[object] | None = None
        """A long-lived kernel loads the turn engine in a thread at open: importing it
        inside the first turn would hold the event loop (and every client) for seconds."""
        self.admission = AdmissionController.from_settings(home.settings.daemon)
        """The one gate every turn and model attempt of this kernel passes (``[daemon]``)."""

    def slot_clock(self, zone: str | None) -> SlotClock:
        """The schedule cache for ``zone`` (the tick's and the listing's next-due answers)."""
        name = zone or "UTC"
        if name not in self._slot_clocks:
            self._slot_clocks[name] = SlotClock(user_zone(name))
        return self._slot_clocks[name]

    def queued_heinzels(self) -> dict[str, str]:
        """The heinzels with a turn waiting for admission in this kernel, and why."""
        return {
            ticket.owner: ticket.blocked_by or "capacity"
            for ticket in self.admission.tickets("turn")
            if ticket.admitted_at is None
        }

    def observe(self, observation: Observation) -> None:
        """Tell every observer (the daemon's feed, an embedded cockpit) what just happened."""
        for observer in list(self.observers):
            observer(observation)

    @classmethod
    async def open(cls, home: Home, *, reconcile: bool = True, long_lived: bool = False) -> Self:
        """Open the kernel of ``home``.

        A ``long_lived`` kernel (the daemon) keeps each heinzel's session (its
        lock, writer and projection) held after a command, so the next turn
        skips reading the spine again, and runs turns as background tasks, so
        a command that starts one answers at once. A short-lived CLI or an
        embedded cockpit releases each session after its command (another
        process may write that spine in between) and runs turns inline.
        """
        with store_io(home.heinzel_root):
            home.heinzel_root.mkdir(mode=0o700, parents=True, exist_ok=True)
        index = await Index.open(home.index_path)
        kernel: Self | None = None
        try:
            kernel = cls(home, index, long_lived=long_lived)
            if reconcile:
                try:
                    await kernel.reconcile()
                except IndexDamaged:
                    await index.recreate()
                    await kernel.reconcile()
        except BaseException:
            # The index's connection runs a thread that keeps the process alive until closed.
            await (index.close() if kernel is None else kernel.close())
            raise
        if long_lived:
            kernel.warming = asyncio.ensure_future(
                asyncio.to_thread(importlib.import_module, ENGINE_MODULE)
            )
        return kernel

    async def close(self) -> None:
        """Cancel background turns without ending them (the next start resumes them)."""
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.admission.close()
        if self.warming is not None:
            await asyncio.gather(self.warming, return_exceptions=True)
        for session in list(self.sessions.values()):
            session.close()
        self.sessions.clear()
        await self.index.close()

    # -- sessions (the write side) ---------------------------------------------------------

    async def lease_token(self, heinzel_id: str, row: Mapping[str, Any]) -> int | None:
        """The team lease's fencing token a turn starts under (``TeamCommands``); None here."""
        return None

    async def check_lease(self, heinzel_id: str, token: int, name: str) -> None:
        """Refuse a team turn's effects once its lease is gone (``TeamCommands``); none here."""

    async def session(self, heinzel_id: str) -> HeldSession:
        """This kernel's hold on a heinzel's spine, opened (and indexed) on first use."""
        held = self.sessions.get(heinzel_id)
        if held is None:
            held = HeldSession(
                heinzel_id, self.home.heinzel_dir(heinzel_id), self.index, self.observe
            )
            self.sessions[heinzel_id] = held
            try:
                row = held.projection.heinzel
                if await held.check_against_index():
                    held.projection.dirty.clear()
                elif self.index.seen(heinzel_id) != (row["seq"], row["last_hash"]):
                    await held.sync_index(full=True)
                else:
                    held.projection.dirty.clear()
            except BaseException:
                self.release(heinzel_id)
                raise
        return held

    def running_turns(self) -> dict[str, str]:
        """Every turn running in this kernel now: heinzel id → turn id (``TurnCommands``)."""
        return {}

    async def accepted(self, heinzel_id: str) -> None:
        """The user accepted a break in this heinzel's spine: what it held up may go on
        (``TurnCommands`` resumes a turn the break had left open)."""

    def release(self, heinzel_id: str) -> None:
        held = self.sessions.pop(heinzel_id, None)
        if held is not None:
            held.close()

    @contextlib.asynccontextmanager
    async def holding(self, heinzel_id: str) -> AsyncIterator[HeldSession]:
        """Hold a session for one command, releasing it after unless it was already held."""
        was_held = heinzel_id in self.sessions
        held = await self.session(heinzel_id)
        try:
            yield held
        finally:
            if not was_held and not self.long_lived:
                self.release(heinzel_id)

    async def append(
        self,
        heinzel_id: str,
        payload: EventData,
        *,
        turn: str | None = None,
        key: str | None = None,
    ) -> Event:
        held = await self.session(heinzel_id)
        return await held.append(payload, turn=turn, key=key)

    async def create_heinzel(
        self, name: str, *, namespace: str = "me", origin: str = "file", template: str | None = None
    ) -> str:
        """Mint an id and write the heinzel's first event. Names are checked by the caller."""
        heinzel_id = f"hz-{ULID()}"
        async with self.holding(heinzel_id) as held:
            await held.append(
                HeinzelCreated(
                    name=name,
                    namespace=namespace,  # type: ignore[arg-type]
                    origin=origin,  # type: ignore[arg-type]
                    template=template,
                )
            )
        return heinzel_id

    # -- keeping the index honest --------------------------------------------------------

    async def reconcile(self) -> list[str]:
        """Rebuild the rows of every spine that moved since the index last saw it.

        Costs one ``stat`` per spine; a spine is opened only when it differs.
        A spine whose lock another process holds is left to that writer.
        """
        spines = self.home.spine_paths()
        if not stale_spines(await self.index.spine_marks(), spines)[0]:
            return []
        with collector_paused(), interruptible(str(self.index.path)):
            async with self._building():
                # Read again: the process this one waited for may have indexed them.
                marks = await self.index.spine_marks()
                stale, stats = stale_spines(marks, spines)
                await self.index.forget(set(marks) - set(spines))
                return await self._rebuild(
                    [h for h in stale if h in spines], stats, marks, skip_busy=True
                )

    @contextlib.asynccontextmanager
    async def _building(self) -> AsyncIterator[None]:
        """The home's index build lock (``heinzel/index.lock``) while the block runs.

        Two processes rebuilding one index at once each skip the spines the
        other holds while it folds them: the one that commits first lists part
        of the home. The second waits for the first, then rebuilds only what
        is still stale; after ``REBUILD_WAIT_S`` it says so (``HZS128``). A
        home hz may not write to cannot be rebuilt by another process either.
        """
        lock = FileLock(self.home.heinzel_root / INDEX_LOCK_NAME)
        deadline = time.monotonic() + REBUILD_WAIT_S
        while True:
            try:
                if lock.try_acquire():
                    break
            except HzError:
                break
            if time.monotonic() >= deadline:
                raise HzError(
                    "HZS128",
                    f"another process ({_holder(lock)}) has been rebuilding the index for "
                    f"{REBUILD_WAIT_S:.0f} s; nothing was listed short of the whole home: "
                    "try again once it is done",
                    str(lock.path),
                )
            await asyncio.sleep(_BUILD_POLL_S)
        try:
            yield
        finally:
            lock.release()

    async def reindex(self) -> api.ReindexReport:
        """Rebuild every heinzel's rows from its spine (``hz heinzel reindex``).

        An index file removed or replaced under this kernel is opened afresh
        as it now is, and a damaged one (a malformed page, not a database) is
        replaced by a new one first; whether it is damaged is asked of the file itself
        (``Index.sound``), never of this kernel's connections, whose cached
        pages can hide an index overwritten under them. A spine that
        contradicts what the index saw (cut off, last line changed) keeps its
        last known rows, marked damaged: a rebuild never makes damage silent.
        Ctrl-C stops it at once (``HZS127``), keeping the index as it was.
        """
        with collector_paused(), interruptible(str(self.index.path)):
            async with self._building():
                return await self._reindex()

    async def _reindex(self) -> api.ReindexReport:
        started = time.perf_counter()
        ids = self.home.heinzel_ids()
        stats = {i: stat_spine(self.home.heinzel_dir(i) / SPINE_NAME) for i in ids}
        marks: dict[str, SpineMark] = {}
        if self.index.replaced():
            await self.index.reconnect()
        if not self.index.sound():
            await self.index.recreate()
        else:
            try:
                marks = await self.index.spine_marks()
            except IndexDamaged:
                await self.index.recreate()
        # A held spine is folded from what its writer holds; the others by worker processes
        # while this one writes the rows of those already folded.
        # Each spine's place in ``ids`` orders its lines' feed positions among equal times.
        held = [
            folded(s.projection, s.scan, marks.get(i), place)
            for place, i in enumerate(ids)
            if (s := self.sessions.get(i)) is not None
        ]
        jobs = [
            (i, self.home.heinzel_dir(i), marks.get(i), place)
            for place, i in enumerate(ids)
            if i not in self.sessions
        ]
        taken: list[Folded] = []
        batches = _taking(itertools.chain([held], fold_all(jobs)), taken)
        contradicted: list[str] = []
        try:
            await self.index.forget(set(marks) - set(ids))
            self.index.rebuild(
                batches, stats, emptied=not marks.keys() & set(ids), keep_contradicted=True
            )
            contradicted = [f.id for f in taken if f.contradicts]
        except IndexDamaged:
            await self.index.recreate()
            self.index.rebuild(
                itertools.chain([list(taken)], batches),
                stats,
                emptied=True,
                keep_contradicted=False,
            )
        finally:
            # A failed write stops the workers now, not once its error is let go.
            batches.close()
        for heinzel_id in contradicted:
            await self.index.mark_damaged(heinzel_id, stats.get(heinzel_id))
        self.index.damage_seen = False
        by_id = {f.id: f for f in taken}
        spines = [by_id[i] for i in ids]
        self.warnings.extend(e for f in spines if (e := f.error()) is not None)
        return api.ReindexReport(
            heinzels=len(ids),
            events=sum(f.events for f in spines),
            seconds=round(time.perf_counter() - started, 4),
            damaged=[f.id for f in spines if f.damaged or f.contradicts],
        )

    def _project_from_disk(self, heinzel_id: str) -> tuple[Projection, SpineScan | None]:
        held = self.sessions.get(heinzel_id)
        if held is not None:
            return held.projection, held.scan
        proj, found, warning = project_spine(heinzel_id, self.home.heinzel_dir(heinzel_id))
        if warning is not None:
            self.warnings.append(warning)
        return proj, found

    async def _rebuild(
        self,
        ids: list[str],
        stats: dict[str, SpineStat | None],
        marks: dict[str, SpineMark],
        *,
        skip_busy: bool,
    ) -> list[str]:
        """Rebuild the rows of ``ids`` from their spines, checking each against its mark.

        A spine that contradicts the seq and hash the index saw is not
        projected over its rows: it is marked damaged and its rows stay.
        """
        projections: list[Projection] = []
        contradicted: list[str] = []
        spines: dict[str, list[Spot]] = {}
        locks: list[FileLock] = []
        try:
            for heinzel_id in ids:
                if heinzel_id not in self.sessions:
                    lock = FileLock(self.home.heinzel_dir(heinzel_id) / LOCK_NAME)
                    try:
                        acquired = lock.try_acquire()
                    except HzError as exc:
                        # A folder hz may not write to (mode 000, read-only): no writer can
                        # take it either; its rows come from what can be read, or it is
                        # damaged, and every other heinzel is listed as usual.
                        self.warnings.append(exc)
                        acquired = True
                    else:
                        if acquired:
                            locks.append(lock)
                    if not acquired and skip_busy:
                        continue
                proj, found = self._project_from_disk(heinzel_id)
                if contradicts(marks.get(heinzel_id), found):
                    contradicted.append(heinzel_id)
                else:
                    projections.append(proj)
                    if found is not None:
                        spines[heinzel_id] = spots(found.events)
            await self.index.write(projections, stats, full=True, spines=spines)
            for heinzel_id in contradicted:
                await self.index.mark_damaged(heinzel_id, stats.get(heinzel_id))
        finally:
            for lock in locks:
                lock.release()
        return [p.id for p in projections] + contradicted

    async def resolve(self, ref: str) -> dict[str, Any]:
        """The index row of a heinzel named by id or name (``HZU010`` when unknown); a name
        no heinzel has now names the one that had it before a rename."""
        row = await self.index.heinzel(ref)
        if row is None:
            renamed = self.index.former_names().get(ref)
            row = await self.index.heinzel(renamed) if renamed is not None else None
        if row is None:
            close = difflib.get_close_matches(ref, await self.index.names(), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else " (hz heinzel list names them)"
            raise UsageError("HZU010", f"no heinzel with that name or id{hint}", ref[:80])
        return row


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a rebuild reads whole spines.

    A rebuild allocates a few objects per line and keeps them (events,
    rows); every collection the allocations trigger walks all the kept
    ones again, which cost more than the rebuild itself. Its objects hold
    no cycles, so nothing waits for the collector meanwhile.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _taking(
    batches: Iterator[list[Folded]], taken: list[Folded]
) -> Generator[list[Folded], None, None]:
    """``batches``, keeping each spine in ``taken`` as it passes: a rebuild that failed midway
    starts again with those, then the rest."""
    for batch in batches:
        taken.extend(batch)
        yield batch


def _holder(lock: FileLock) -> str:
    holder = read_holder(lock.path)
    return f"pid {holder}" if holder else "pid unknown"
