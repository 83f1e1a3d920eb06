"""Noticing spine appends: ``watchfiles`` on the heinzel folder, spine tails by byte offset.

The watcher turns file-system events into a ``SpineBatch``: which heinzels'
spines gained whole lines (and the newest seq seen), and which went away.
It reads nothing but the new bytes of the spines that moved. The cockpit
decides what to re-ask the kernel; the watcher never talks to it.

Tuning: the watcher's thread sleeps ``STEP_MS`` between looks at the OS
events, and delivers a batch once nothing new arrived for one step (or
``DEBOUNCE_MS`` passed since the first event of a burst), so an append is
seen within a few milliseconds and a burst arrives as one batch. When idle
the thread only returns to Python every ``RUST_TIMEOUT_MS``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from hz_kernel.home import HEINZEL_ID
from hz_tui.tail import SPINE_NAME, SpineLine, SpineTail

if TYPE_CHECKING:
    import anyio
    from watchfiles import Change

STEP_MS = 4
DEBOUNCE_MS = 40
RUST_TIMEOUT_MS = 60_000


class BodyDelta(BaseModel):
    """A record a running turn added to its body, as the daemon's feed carries it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    turn: str | None
    record: dict[str, Any]


class SpineBatch(BaseModel):
    """Spines that moved since the last batch: id → newest seq read (None: moved, no whole line).

    ``lines`` holds the new lines themselves, for what reacts to a kind (a draft
    landed, a turn failed) rather than to a row. Only a batch from the
    daemon's feed (``hz_tui.sources.FeedSource``) carries ``bodies`` (deltas
    of running turns' bodies, by heinzel) or ``reload`` (the feed lost its
    place: every row and page asks the kernel afresh).
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    moved: dict[str, int | None] = {}
    gone: list[str] = []
    lines: dict[str, list[SpineLine]] = {}
    bodies: dict[str, list[BodyDelta]] = {}
    reload: bool = False

    def __bool__(self) -> bool:
        return bool(self.moved or self.gone or self.bodies or self.reload)


class SpineWatcher:
    """Tails of every spine under ``<home>/heinzel``, fed by file-system events."""

    def __init__(self, heinzel_root: Path) -> None:
        self.root = heinzel_root
        self.tails: dict[str, SpineTail] = {}

    def prime(self, heinzel_ids: Iterable[str]) -> None:
        """Start each known spine's tail at its current end: what is there is already shown."""
        root = os.fspath(self.root)
        for heinzel_id in heinzel_ids:
            path = Path(os.path.join(root, heinzel_id, SPINE_NAME))  # one parse, not two joins
            self.tails[heinzel_id] = SpineTail.at_end(path)

    def heinzel_of(self, path: str) -> str | None:
        """The heinzel id a changed path belongs to, for spines and heinzel folders only."""
        try:
            relative = Path(path).relative_to(self.root)
        except ValueError:
            return None
        if not relative.parts or not HEINZEL_ID.match(relative.parts[0]):
            return None
        if len(relative.parts) == 1 or relative.parts[1:] == (SPINE_NAME,):
            return relative.parts[0]
        return None

    def wants(self, change: Change, path: str) -> bool:
        """The ``watchfiles`` filter: spine files and heinzel folders, nothing else."""
        return self.heinzel_of(path) is not None

    def collect(self, changes: Iterable[tuple[Change, str]]) -> SpineBatch:
        """Read the new lines of every spine named in ``changes``."""
        touched = {h for _, path in changes if (h := self.heinzel_of(path))}
        moved: dict[str, int | None] = {}
        gone: list[str] = []
        lines: dict[str, list[SpineLine]] = {}
        for heinzel_id in sorted(touched):
            spine = self.root / heinzel_id / SPINE_NAME
            if not os.path.lexists(spine):
                if self.tails.pop(heinzel_id, None) is not None:
                    gone.append(heinzel_id)
                continue
            tail = self.tails.setdefault(heinzel_id, SpineTail(spine))
            found = tail.read_new()
            if found.lines or found.restarted or found.unreadable:
                moved[heinzel_id] = found.last_seq
            if found.lines:
                lines[heinzel_id] = found.lines
        return SpineBatch(moved=moved, gone=gone, lines=lines)

    async def run(
        self, deliver: Callable[[SpineBatch], None], stop: anyio.Event | None = None
    ) -> None:
        """Watch until cancelled (or ``stop`` is set), delivering each non-empty batch."""
        from watchfiles import awatch  # not needed before the first frame: loaded after it

        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        async for changes in awatch(
            self.root,
            watch_filter=self.wants,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            rust_timeout=RUST_TIMEOUT_MS,
            stop_event=stop,
            recursive=True,
        ):
            batch = self.collect(changes)
            if batch:
                deliver(batch)
