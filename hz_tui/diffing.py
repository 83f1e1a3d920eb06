"""The review desk's diff model: hunks of lines, with the changed words inside changed lines.

Pure and widget-free, so the rules are unit-tested and the screen only
draws. ``compare`` finds changed lines with difflib (what ``diff -u``
shows), folds long unchanged stretches into gaps, and pairs the old and new
lines of each replaced block to mark the words that differ. Word marks are
skipped where they would only be noise (lines that share little) or cost
too much (very long lines), so a big section still diffs at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import zip_longest
from typing import Literal

#: Unchanged lines kept around each change; longer unchanged runs fold into a gap.
CONTEXT = 3
#: Lines longer than this (characters, both sides together) get no word marks.
MAX_MARKED_CHARS = 4000
#: Below this similarity two paired lines count as rewritten: the line colour says enough.
MIN_SIMILARITY = 0.3

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")

Kind = Literal["same", "old", "new"]
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Line:
    """One line of one side: ``old`` (removed), ``new`` (added) or ``same`` (both sides).

    ``number`` is its 1-based line number on its own side (an unchanged line
    has one on each side: the old side's ``Block.old`` numbers the old text);
    ``marks`` are the character spans of words that changed.
    """

    kind: Kind
    number: int
    text: str
    marks: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class Block:
    """A run of lines: unchanged (``old`` and ``new`` alike) or changed (either may be empty)."""

    old: tuple[Line, ...]
    new: tuple[Line, ...]

    @property
    def changed(self) -> bool:
        return bool(self.old or self.new) and (not self.old or self.old[0].kind != "same")

    def rows(self) -> Iterator[tuple[Line | None, Line | None]]:
        """Side by side: old and new lines paired as they are marked."""
        yield from zip_longest(self.old, self.new)

    def lines(self) -> Iterator[Line]:
        """Unified: an unchanged block once, a changed one as its removals then its additions."""
        if not self.changed:
            yield from self.new
        else:
            yield from self.old
            yield from self.new


@dataclass(frozen=True, slots=True)
class Gap:
    """Unchanged lines left out between hunks (or before the first, after the last)."""

    lines: int


@dataclass(frozen=True, slots=True)
class Diff:
    """A whole comparison: the parts in order, and how many lines each side changed."""

    parts: tuple[Block | Gap, ...]
    removed: int
    added: int

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.added)

    def unified(self) -> Iterator[Line | Gap]:
        for part in self.parts:
            if isinstance(part, Gap):
                yield part
            else:
                yield from part.lines()


def compare(before: str, after: str, *, context: int = CONTEXT) -> Diff:
    """The diff from ``before`` to ``after``, with ``context`` unchanged lines around changes."""
    old = before.splitlines()
    new = after.splitlines()
    matcher = SequenceMatcher(None, old, new)
    parts: list[Block | Gap] = []
    removed = added = 0
    shown_to = 0  # the first new-side line not yet shown or folded
    for group in matcher.get_grouped_opcodes(context):
        if not any(tag != "equal" for tag, *_ in group):
            continue
        start = group[0][3]
        if start > shown_to:
            parts.append(Gap(start - shown_to))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                kept = tuple(Line("same", i + 1, old[i]) for i in range(i1, i2))
                same = tuple(Line("same", j + 1, new[j]) for j in range(j1, j2))
                parts.append(Block(kept, same))
                continue
            removed += i2 - i1
            added += j2 - j1
            parts.append(_changed(old, new, i1, i2, j1, j2))
        shown_to = group[-1][4]
    if parts and shown_to < len(new):
        parts.append(Gap(len(new) - shown_to))
    return Diff(tuple(parts), removed, added)


def _changed(old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int) -> Block:
    """A replaced block: the i-th removed line paired with the i-th added one for word marks."""
    gone = [Line("old", i + 1, old[i]) for i in range(i1, i2)]
    came = [Line("new", j + 1, new[j]) for j in range(j1, j2)]
    for n in range(min(len(gone), len(came))):
        before, after = word_marks(gone[n].text, came[n].text)
        gone[n] = Line("old", gone[n].number, gone[n].text, before)
        came[n] = Line("new", came[n].number, came[n].text, after)
    return Block(tuple(gone), tuple(came))


def word_marks(before: str, after: str) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """The character spans of the words that differ between two versions of one line.

    Empty on both sides when the lines are too long to compare cheaply or
    share too little for word marks to mean anything.
    """
    if len(before) + len(after) > MAX_MARKED_CHARS:
        return (), ()
    a = _TOKEN.findall(before)
    b = _TOKEN.findall(after)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < MIN_SIMILARITY:
        return (), ()
    opcodes = matcher.get_opcodes()
    # Similarity by the words kept, not the spaces: two rewritten lines share many spaces.
    words = sum(len(t) for t in (*a, *b) if not t.isspace())
    kept = sum(
        len(t) for tag, i1, i2, *_ in opcodes if tag == "equal" for t in a[i1:i2] if not t.isspace()
    )
    if not words or 2 * kept / words < MIN_SIMILARITY:
        return (), ()
    old_at = _offsets(a)
    new_at = _offsets(b)
    old_marks: list[Span] = []
    new_marks: list[Span] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        if i2 > i1:
            _add(old_marks, _trimmed(before, old_at[i1], old_at[i2]))
        if j2 > j1:
            _add(new_marks, _trimmed(after, new_at[j1], new_at[j2]))
    return tuple(old_marks), tuple(new_marks)


def _trimmed(text: str, start: int, end: int) -> Span:
    """A changed span without the spaces at its edges (unless spaces are all that changed)."""
    inner = text[start:end]
    if not inner.strip():
        return start, end
    return start + len(inner) - len(inner.lstrip()), end - len(inner) + len(inner.rstrip())


def _offsets(tokens: list[str]) -> list[int]:
    """Where each token starts, plus the end: token ``i`` covers ``at[i]:at[i + 1]``."""
    at = [0]
    for token in tokens:
        at.append(at[-1] + len(token))
    return at


def _add(marks: list[Span], span: Span) -> None:
    """Append a span, merged with the previous one when they touch."""
    if marks and marks[-1][1] >= span[0]:
        marks[-1] = (marks[-1][0], max(marks[-1][1], span[1]))
    else:
        marks.append(span)
