"""Folding a whole home's spines for a reindex, in worker processes beside the index writer.

Reading, chain-checking and folding every spine is pure CPU work per spine,
and so is writing the rows it gives; one process did them one after the
other. Here worker processes fold spines into ready row tuples while the
process that owns the index writes each batch as it arrives, so the two
overlap on a machine with more than one core. A small home (or a
one-core machine) is folded in the calling process: starting workers would
cost more than they save. Either way each spine gives the same ``Folded``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

from hz_kernel.errors import HzError
from hz_kernel.store import positions
from hz_kernel.store.index import CHILD_TABLES, HEINZELS, Filled, SpineMark, Table
from hz_kernel.store.projection import Projection
from hz_kernel.store.scan import SpineScan, index_break, scan_file
from hz_kernel.store.session import project
from hz_kernel.store.spine import SPINE_NAME

#: Fewer spines than this are folded in the calling process.
POOL_FROM = 64
#: Spines per batch a worker folds and hands back: small enough that the writer starts early.
BATCH = 16
#: Worker processes at most (the writer is busy too).
MAX_WORKERS = 2

log = logging.getLogger(__name__)


class Folded(NamedTuple):
    """One spine folded into what the index stores of it (plain data: it crosses processes)."""

    id: str
    rows: dict[str, dict[Filled, list[tuple[Any, ...]]]]
    """Table name → the rows, heinzels' included, by the columns they fill (``Table.sparse``):
    each row as the values of those columns."""
    seq: int
    last_hash: str | None
    staged: list[positions.Staged]
    """Each line the spine holds as its feed position needs it (``positions.staged``)."""
    events: int
    damaged: bool
    contradicts: bool
    """The spine contradicts the seq and hash the index saw: its rows must stay."""
    warning: tuple[str, str, str | None] | None
    """Code, message and place of the error that kept the spine from being read."""

    def error(self) -> HzError | None:
        return None if self.warning is None else HzError(*self.warning)


def folded(
    proj: Projection,
    found: SpineScan | None,
    mark: SpineMark | None,
    place: int,
    warning: HzError | None = None,
) -> Folded:
    """What the index stores of a projection and the scan it came from (None: unreadable);
    ``place`` is the spine's place in the order its feed positions are given in."""
    rows: dict[str, dict[Filled, list[tuple[Any, ...]]]] = {}
    for table, store in ((HEINZELS, [proj.heinzel]), *_stores(proj)):
        grouped: dict[Filled, list[tuple[Any, ...]]] = {}
        for filled, values in map(table.sparse, store):
            grouped.setdefault(filled, []).append(values)
        rows[table.name] = grouped
    events = found.events if found is not None else []
    return Folded(
        proj.id,
        rows,
        proj.heinzel["seq"],
        proj.heinzel["last_hash"],
        positions.staged(place, events),
        len(events),
        bool(proj.heinzel["damaged"]),
        contradicts(mark, found),
        None if warning is None else (warning.code, warning.message, warning.place),
    )


def _stores(proj: Projection) -> Iterator[tuple[Table, Iterable[dict[str, Any]]]]:
    for table in CHILD_TABLES:
        store: dict[Any, dict[str, Any]] = getattr(proj, table.store)
        yield table, store.values()


def contradicts(mark: SpineMark | None, found: SpineScan | None) -> bool:
    """True when a spine (None: unreadable) contradicts the seq and hash its index mark holds."""
    if mark is None or not mark[0]:
        return False
    return found is None or index_break((mark[0], mark[3]), found) is not None


Job = tuple[str, Path, SpineMark | None, int]
"""A spine to fold: its heinzel's id and folder, the index's mark of it and its place."""


def project_spine(
    heinzel_id: str, heinzel_dir: Path
) -> tuple[Projection, SpineScan | None, HzError | None]:
    """A spine read and folded; an unreadable one is a damaged heinzel with nothing folded,
    and the error that kept it from being read."""
    try:
        found = scan_file(heinzel_dir / SPINE_NAME)
    except HzError as exc:
        proj = Projection(heinzel_id)
        proj.mark_damaged(True)
        return proj, None, exc
    return project(heinzel_id, heinzel_dir, found), found, None


def fold_spine(job: Job) -> Folded:
    heinzel_id, heinzel_dir, mark, place = job
    proj, found, warning = project_spine(heinzel_id, heinzel_dir)
    return folded(proj, found, mark, place, warning)


def _fold_batch(jobs: Sequence[Job]) -> list[Folded]:
    return list(map(fold_spine, jobs))


def fold_all(jobs: Sequence[Job]) -> Iterator[list[Folded]]:
    """Batches of folded spines in the order of ``jobs``, each yielded as soon as it is done.

    Workers are forked (on Linux only: elsewhere a forked child of a threaded
    process is not safe): they start at once with everything imported, and
    fold only (they touch no connection, lock or file they inherited). When
    workers cannot start or die, the batches they did not hand back are
    folded here. Every worker is gone when the iteration ends, however it ends.
    """
    batches = [jobs[at : at + BATCH] for at in range(0, len(jobs), BATCH)]
    handed = 0
    if len(jobs) >= POOL_FROM and _workers() >= 2:
        context = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(
            _workers(), mp_context=context, initializer=_tie_to, initargs=(os.getpid(),)
        )
        try:
            # Forked with Ctrl-C held back: a child takes it only once it ignores it.
            with _sigint_held():
                folding = pool.map(_fold_batch, batches)
            for batch in folding:
                handed += 1
                yield batch
        except (OSError, BrokenProcessPool) as exc:
            log.warning(
                "HZS096: reindex: the worker processes failed (%s); "
                "the spines they did not fold are folded by this process",
                exc,
            )
        finally:
            # Batches not begun are dropped; a worker ends once its current one is done.
            pool.shutdown(wait=True, cancel_futures=True)
    yield from map(_fold_batch, batches[handed:])


#: Linux's ``prctl`` option that signals a process when the thread that forked it ends.
_PR_SET_PDEATHSIG = 1


def _tie_to(parent: int) -> None:
    """A worker dies with the process that forked it, and leaves Ctrl-C to it.

    A reindexing process killed outright (kill -9, the OOM killer) never shuts
    its pool down: its workers would sleep forever on a queue whose write end
    they hold themselves, holding the index and the caller's stdout open.
    Ctrl-C reaches the whole process group: a worker that took it would print
    its own traceback; the parent stops, and the pool's shutdown ends them.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """A SIGINT that comes while the block runs is noted, and taken once it has run.

    Forked children inherit this process's handlers: one that took Ctrl-C
    before it ignores it would raise in a child, or in the parent's own
    after-fork hooks, where the exception is lost.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
        if came:
            signal.raise_signal(signal.SIGINT)


def _workers() -> int:
    """Worker processes to fold with: none off Linux, else up to the cores this process may use."""
    if sys.platform != "linux":
        return 0
    return min(MAX_WORKERS, len(os.sched_getaffinity(0)))


class RebuildInterrupted(HzError):
    """Ctrl-C (SIGINT) stopped a rebuild of the index: its transaction was rolled back."""

    exit_code = 130

    def __init__(self, place: str) -> None:
        super().__init__(
            "HZS127",
            "interrupted (Ctrl-C) while rebuilding the index: nothing of the rebuild was kept; "
            "the index is as it was, and hz brings it up to date when it next opens the home",
            place,
        )


class _Stopped(KeyboardInterrupt):
    """Raised by ``interruptible``'s handler: no ``except HzError`` or ``except Exception`` on
    the way (a spine that cannot be read, say) may take it for something else."""


@contextlib.contextmanager
def interruptible(place: str) -> Iterator[None]:
    """Ctrl-C stops the block at once, as ``RebuildInterrupted``.

    A rebuild is seconds of code that never awaits, and asyncio's own
    handler only cancels the main task, which takes effect at its next await:
    after the rebuild, which then ran to its end. Here the first SIGINT
    raises where the block is running (its transaction rolls back, its
    workers are shut down), or, while the event loop waits on something
    else, cancels the task that runs the block; one during the clean-up is
    ignored, so it ends. Only the main thread can take signals; elsewhere
    the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = _current_task()
    came: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        if came:
            return
        came.append(signum)
        if owner is None or _current_task() is owner:
            raise _Stopped
        owner.cancel()

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    except (_Stopped, asyncio.CancelledError):
        if not came:
            raise
        if owner is not None and owner.cancelling():
            owner.uncancel()
        raise RebuildInterrupted(place) from None
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None
