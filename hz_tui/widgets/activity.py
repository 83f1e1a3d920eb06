"""What just happened across all heinzels: turns started and finished, drafts, approvals, failures.

Fed by the spine lines the app already receives (``CockpitApp.spines_moved``:
the home's files, or the daemon's feed with ``--connect``), so it costs no
kernel call. It starts with each heinzel's last turn from the rows the home
holds, then, once the recently active heinzels' spine tails are read
(``from_spine_tails``, off the first frame's path), with what those tails
say: a cockpit opened again shows what happened before it, not one line a
heinzel. A pane beside the table where there is room; on a narrow terminal
the home shows only the newest entry, as one line.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from hz_kernel.overview import HeinzelSummary
from hz_tui import display
from hz_tui.rows import Palette
from hz_tui.tail import SPINE_NAME, SpineLine, SpineTail
from hz_tui.watcher import SpineBatch

#: Entries kept (the oldest go first).
KEEP = 200
#: The widths of the age and name columns (a longer name ends in an ellipsis).
AGE_WIDTH = 4
NAME_WIDTH = 16
#: The history read at start: the spine tails of this many most recently active heinzels,
#: each read back from its end until it gives ``HISTORY_ENTRIES`` entries (a turn's tool and
#: attempt lines, which the pane leaves out, can take most of a tail), from ``HISTORY_WINDOW``
#: bytes, four times more each time, up to ``HISTORY_WINDOW_MAX``.
HISTORY_HEINZELS = 40
HISTORY_ENTRIES = 20
HISTORY_WINDOW = 16 << 10
HISTORY_WINDOW_MAX = 1 << 20
Tone = Literal["plain", "ok", "warn", "bad"]


@dataclass(frozen=True)
class Activity:
    """One thing that happened to one heinzel."""

    at: str
    heinzel: str
    name: str
    text: str
    tone: Tone = "plain"
    seq: int | None = None
    """The spine line it came from (None: seeded from a row), so a line read twice shows once."""


#: Kinds whose line always reads the same.
FIXED: dict[str, tuple[str, Tone]] = {
    "approval.observed": ("draft approved", "ok"),
    "draft.rejected": ("draft rejected", "plain"),
    "question.asked": ("asked you a question", "warn"),
    "amendment.proposed": ("proposed a contract change", "warn"),
    "contract.approved": ("contract approved", "ok"),
    "heinzel.created": ("created", "plain"),
    "heinzel.paused": ("paused", "plain"),
    "heinzel.unpaused": ("unpaused", "plain"),
    "heinzel.retired": ("retired", "plain"),
    "attempt.failed": ("a model request failed", "bad"),
    "effect.failed": ("an effect failed", "bad"),
}


def describe(line: SpineLine) -> tuple[str, Tone] | None:
    """How a spine line reads in the activity pane; None for lines it leaves out."""
    data = line.data
    kind = line.kind
    if kind == "turn.started":
        return f"started ({data.get('cause', '?')})", "ok"
    if kind == "turn.finished":
        disposition = str(data.get("disposition", "?"))
        if disposition in ("failed", "abandoned"):
            why = data.get("reason") or data.get("report") or "no reason given"
            return f"{disposition}: {why}", "bad"
        return str(data.get("report") or disposition), "plain"
    if kind == "draft.placed":
        return f"placed a draft in {str(data.get('asset', '?')).removeprefix('doc:')}", "warn"
    if kind == "notice.raised":  # a cap reached, a reader's deadline near (docs/flow.md)
        return str(data.get("notice") or "a notice"), "warn"
    return FIXED.get(kind)


def from_batch(batch: SpineBatch, names: Mapping[str, str]) -> list[Activity]:
    """The entries a batch of new spine lines makes, oldest first."""
    entries = []
    for heinzel_id, lines in batch.lines.items():
        name = names.get(heinzel_id, heinzel_id)
        for line in lines:
            described = describe(line)
            if described is not None:
                entries.append(Activity(line.ts, heinzel_id, name, *described, seq=line.seq))
    entries.sort(key=lambda entry: entry.at)
    return entries


def from_rows(items: Iterable[HeinzelSummary]) -> list[Activity]:
    """Each heinzel's last turn, oldest first: what the pane shows before anything happens."""
    entries = []
    for item in items:
        if not item.last_turn_at:
            continue
        if item.state == "awake" and not item.last_disposition:
            text, tone = f"started ({item.last_cause or '?'})", "ok"
        elif item.last_disposition in ("failed", "abandoned"):
            text, tone = f"{item.last_disposition}: {item.last_report or '?'}", "bad"
        else:
            text, tone = item.last_report or item.last_disposition or "finished", "plain"
        entries.append(Activity(item.last_turn_at, item.id, item.name, text, tone))
    entries.sort(key=lambda entry: entry.at)
    return entries


def from_spine_tails(heinzel_root: Path, items: Iterable[HeinzelSummary]) -> list[Activity]:
    """What the most recently active heinzels' spine tails say, oldest first.

    Read once, after the first frame, from ``HISTORY_HEINZELS`` spines, each
    only as far back as its last ``HISTORY_ENTRIES`` entries (or
    ``HISTORY_WINDOW_MAX`` bytes), so the cost does not grow with the home or
    with a heinzel's age. Entries older than the oldest one every busy spine
    reached are left out: the pane shows no gap where one heinzel's history
    was cut short and another's was not. A spine that cannot be read (a
    remote cockpit has none here) adds nothing.
    """
    recent = sorted(
        (item for item in items if item.last_turn_at), key=lambda item: item.last_turn_at or ""
    )[-HISTORY_HEINZELS:]
    root = os.fspath(heinzel_root)
    lines: dict[str, list[SpineLine]] = {}
    since = ""
    for item in recent:
        path = Path(os.path.join(root, item.id, SPINE_NAME))
        found, whole = _recent_lines(path)
        if found:
            lines[item.id] = found
            if not whole:
                since = max(since, found[0].ts)
    names = {item.id: item.name for item in recent}
    entries = from_batch(SpineBatch(lines=lines), names)
    return [entry for entry in entries if entry.at >= since][-KEEP:]


def _recent_lines(path: Path) -> tuple[list[SpineLine], bool]:
    """The spine's last lines, enough for ``HISTORY_ENTRIES`` entries; True if they are all."""
    window = HISTORY_WINDOW
    while True:
        tail = SpineTail.near_end(path, window)
        whole = tail.offset == 0
        found = tail.read_new().lines
        enough = sum(describe(line) is not None for line in found) >= HISTORY_ENTRIES
        if whole or not found or enough or window >= HISTORY_WINDOW_MAX:
            return found, whole or not found
        window *= 4


class ActivityPane(Static):
    """The newest entries first; as a line (``-line``), just the newest."""

    DEFAULT_CSS = """
    ActivityPane {
        padding: 0 1;
        height: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &.-line {
            height: 1;
        }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.entries: deque[Activity] = deque(maxlen=KEEP)
        self._seen: set[tuple[str, int]] = set()
        self.seeded = False
        self.palette = Palette()
        self.now: datetime | None = None

    def seed(self, items: Iterable[HeinzelSummary], now: datetime) -> None:
        """Fill an empty pane from the rows' last turns (once, before any live entry)."""
        if not self.seeded:
            self.entries.extend(from_rows(items)[-KEEP:])
            self.seeded = bool(self.entries)
            self.show(now)

    def add_history(self, entries: list[Activity], now: datetime) -> None:
        """Put the spines' own history in place of the lines seeded from rows."""
        if not entries:
            return
        self.entries = deque((e for e in self.entries if e.seq is not None), maxlen=KEEP)
        self.add(entries, now)

    def add(self, entries: list[Activity], now: datetime) -> None:
        """Add what is new, in time order: after a reconnect a spine's lines may come again,
        and a catch-up may bring lines older than the newest shown (attack pass: the pane
        repeated and reordered events after daemon restarts)."""
        fresh = [e for e in entries if e.seq is None or (e.heinzel, e.seq) not in self._seen]
        if not fresh:
            return
        self.seeded = True
        self._seen.update((e.heinzel, e.seq) for e in fresh if e.seq is not None)
        ordered = bool(self.entries) and fresh[0].at >= self.entries[-1].at
        self.entries.extend(fresh)
        if not ordered:
            self.entries = deque(sorted(self.entries, key=lambda e: e.at), maxlen=KEEP)
        if len(self._seen) > 4 * KEEP:  # remember what the pane can still show, and no more
            self._seen = {(e.heinzel, e.seq) for e in self.entries if e.seq is not None}
        self.show(now)

    def show(self, now: datetime) -> None:
        self.now = now
        if not self.entries:
            self.update(Text("Nothing has happened yet.", style="dim"))
        elif self.has_class("-line"):
            self.update(self._line(self.entries[-1], now))
        else:
            self.update(self._table(now))

    def _line(self, entry: Activity, now: datetime) -> Text:
        when = display.ago(entry.at, now, exact=False)
        return Text.assemble(
            ("▸ ", "dim"),
            (entry.name, "bold"),
            " ",
            (display.visible(entry.text), self._style(entry.tone)),
            (f" · {when}", "dim"),
            no_wrap=True,
            overflow="ellipsis",
        )

    def _table(self, now: datetime) -> Text:
        """The newest entries as aligned lines: age, name, what happened.

        Plain lines, not a ``rich`` table: the pane redraws on every append,
        and laying out a table of a screenful of rows costs more than the rest
        of the update together. Each line is cut with an ellipsis at the
        pane's edge (the pane's CSS), so no width is needed here.
        """
        shown = max(1, self.size.height - 1) if self.size.height else KEEP
        newest = list(reversed(self.entries))[:shown]
        name_width = min(NAME_WIDTH, max(cell_len(entry.name) for entry in newest))
        lines = [Text("Activity", style="bold")]
        for entry in newest:
            when = display.ago(entry.at, now, exact=False).removesuffix(" ago")
            name = Text(entry.name, style="bold")
            name.truncate(name_width, overflow="ellipsis", pad=True)
            lines.append(
                Text.assemble(
                    (f"{when[:AGE_WIDTH]:<{AGE_WIDTH}} ", "dim"),
                    name,
                    " ",
                    (display.visible(entry.text), self._style(entry.tone)),
                )
            )
        return Text("\n", end="").join(lines)

    def _style(self, tone: Tone) -> Style:
        return {
            "ok": self.palette.ok,
            "warn": self.palette.warn,
            "bad": self.palette.bad,
        }.get(tone, Style())
