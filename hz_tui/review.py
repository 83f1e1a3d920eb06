"""The review desk's rules, apart from its screen: what a diff compares, how it reads, undo.

The texts come from the kernel's ``draft.review`` (the cockpit never reads
a document to find a section itself, so a remote cockpit shows the same).
Two comparisons: the draft against the section's last approved text (what
changed since last time) and against the draft as placed (what you edited).
Narrow terminals get one unified column, wide ones the two sides.

A rejection is held for ``UNDO_SECONDS`` before it is sent, so ``u`` can
take it back (``hz_tui.held_rejects`` keeps it on disk meanwhile).
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Literal

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from hz_kernel.api import DraftReview
from hz_kernel.errors import HzError
from hz_tui import diffing, display
from hz_tui.diffing import Diff, Gap, Line
from hz_tui.rows import Palette

#: What each status of a draft tells the reviewer, in a few words.
STATUS_NOTES = {
    "placed": "unchanged since it was placed",
    "edited": "you edited it since it was placed",
    "approved": "approved already (the tag line is gone)",
    "rejected": "rejected already (the section is gone)",
    "missing": "the document is missing",
}
#: Terminals at least this wide show the two sides of a diff next to each other.
SIDE_BY_SIDE_COLUMNS = 160
#: How long a rejection waits for ``u`` before it is sent.
UNDO_SECONDS = 5.0

Base = Literal["approved", "placed"]
BASE_NAMES: dict[Base, str] = {"approved": "since last approved", "placed": "your edits"}
MARK = Style(reverse=True, bold=True)
MARKDOWN_MODE = "the draft as Markdown"
SIGNS = {"old": "-", "new": "+", "same": " "}
#: The unified diff's gutter: a line number (four places), its sign, a space.
UNIFIED_GUTTER = 7


def draft_text(review: DraftReview) -> str:
    """The draft as it reads now; as placed once its section is gone."""
    if review.status in ("rejected", "missing"):
        return display.visible(review.placed_text)
    return display.visible(review.current_text)


def compared(review: DraftReview, base: Base) -> tuple[str, str, tuple[str, str]]:
    """The two texts a base compares, and the labels of their sides."""
    if base == "placed":
        placed = display.visible(review.placed_text)
        return placed, draft_text(review), ("as placed", "in the document now")
    approved = display.visible(review.approved_text or "")
    return approved, draft_text(review), ("last approved", "this draft")


def render_review(
    review: DraftReview, base: Base, diff: Diff, palette: Palette, *, wide: bool
) -> RenderableType:
    """The review pane: who and where, what is compared, then the diff (two sides if wide)."""
    _, _, labels = compared(review, base)
    header = document_header(review)
    header.append(f"{BASE_NAMES[base]}", style="bold")
    if base == "approved" and review.approved_text is None:
        header.append(f": {review.approved_note or 'no approved text'}", style="italic")
    elif base == "approved" and review.approved_at:
        header.append(f" ({review.approved_at[:10]})", style="dim")
    header.append(f"  −{diff.removed} +{diff.added}\n", style="dim")
    if not diff.changed:
        same = "the same as the last approved text" if base == "approved" else "no edits"
        header.append(f"{same}; the draft:\n", style="italic")
        body = Text("\n".join(f"  {line}" for line in draft_text(review).splitlines()))
        return Group(header, body)
    body_: RenderableType = (
        side_by_side(diff, palette, labels) if wide else unified(diff, palette, labels)
    )
    return Group(header, body_)


def document_header(review: DraftReview) -> Text:
    """Whose draft, in which document and file, and how it stands: above every view of it."""
    header = Text()
    header.append(review.heinzel_name, style="bold")
    header.append(f"  {review.asset}\n", style="dim")
    header.append(f"{review.path}\n", style="dim")
    header.append(STATUS_NOTES.get(review.status, review.status) + "\n", style="italic")
    return header


def markdown_header(review: DraftReview) -> Text:
    """The document header, then which mode the pane is in (Markdown has no diff base); the
    status line names the key back to the diff, as the user's keymap sets it."""
    header = document_header(review)
    header.append(MARKDOWN_MODE + "\n", style="bold")
    return header


def line_text(line: Line, palette: Palette) -> Text:
    """One line coloured by its kind, its changed words in reverse video (readable uncoloured)."""
    style = _kind_style(line.kind, palette)
    text = Text(line.text, style=style)
    for start, end in line.marks:
        text.stylize(style + MARK, start, end)
    return text


def unified(diff: Diff, palette: Palette, labels: tuple[str, str] = ("", "")) -> Group:
    """One column: removed lines, then added ones, with their numbers and signs; a long
    line wraps with a hanging indent, after the gutter (as each side does side by side)."""
    grid = Table.grid()
    grid.add_column(no_wrap=True, width=UNIFIED_GUTTER)
    grid.add_column(ratio=1, overflow="fold")
    for item in diff.unified():
        if isinstance(item, Gap):
            grid.add_row(Text(f"{'⋯':>6}", palette.muted), Text(_gap(item), palette.muted))
            continue
        gutter = Text(f"{item.number:>4} {SIGNS[item.kind]}", style=_gutter(item.kind, palette))
        grid.add_row(gutter, line_text(item, palette))
    if not any(labels):
        return Group(grid)
    return Group(Text(f"--- {labels[0]}\n+++ {labels[1]}", style="bold"), grid)


def side_by_side(diff: Diff, palette: Palette, labels: tuple[str, str]) -> Table:
    """Two columns, old left and new right, paired row by row; long lines fold."""
    table = Table(box=None, expand=True, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("", justify="right", no_wrap=True, width=6)
    table.add_column(labels[0], ratio=1, overflow="fold")
    table.add_column("", justify="right", no_wrap=True, width=6)
    table.add_column(labels[1], ratio=1, overflow="fold")
    for part in diff.parts:
        if isinstance(part, Gap):
            gap = Text(f"⋯ {_gap(part)}", style=palette.muted)
            table.add_row("", gap, "", gap)
            continue
        for old, new in part.rows():
            table.add_row(*_side(old, palette), *_side(new, palette))
    return table


def _side(line: Line | None, palette: Palette) -> tuple[Text, Text]:
    if line is None:
        return Text(""), Text("")
    gutter = Text(f"{line.number} {SIGNS[line.kind]}", style=_gutter(line.kind, palette))
    return gutter, line_text(line, palette)


def _gap(gap: Gap) -> str:
    return f"{gap.lines} unchanged line{'s' if gap.lines != 1 else ''}"


def _kind_style(kind: str, palette: Palette) -> Style:
    return {"old": palette.bad, "new": palette.ok}.get(kind, Style())


def _gutter(kind: str, palette: Palette) -> Style:
    return _kind_style(kind, palette) if kind != "same" else palette.muted


def compare(review: DraftReview, base: Base) -> Diff:
    before, after, _ = compared(review, base)
    return diffing.compare(before, after)


def colour_diff(lines: list[str], palette: Palette) -> Text:
    """Unified-diff lines coloured as a reviewer reads them: added, removed, hunk headers."""
    text = Text()
    for line in lines:
        line = display.visible(line.rstrip("\n"))
        if line.startswith(("---", "+++")):
            text.append(line + "\n", style="bold")
        elif line.startswith("@@"):
            text.append(line + "\n", style=palette.accent)
        elif line.startswith("+"):
            text.append(line + "\n", style=palette.ok)
        elif line.startswith("-"):
            text.append(line + "\n", style=palette.bad)
        else:
            text.append(line + "\n")
    return text


#: Editors that take ``FILE:LINE`` rather than ``+LINE FILE``; VS Code's family uses ``--goto``.
_COLON_EDITORS = frozenset({"hx", "helix", "subl", "sublime_text", "zed"})
_GOTO_EDITORS = frozenset({"code", "code-insiders", "codium", "cursor"})


def editor_command(path: str, line: int | None = None) -> list[str]:
    """``$VISUAL`` or ``$EDITOR`` (with its own arguments), else ``vi``, on ``path`` at ``line``.

    vi, vim, nvim, nano, emacs, micro, kak and most others take ``+LINE``;
    helix and Sublime take ``FILE:LINE``; VS Code takes ``--goto FILE:LINE``.
    A setting that cannot be parsed is ``HzError`` (HZU061).
    """
    setting = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    editor = _editor_words(setting)
    if line is None:
        return [*editor, path]
    name = Path(editor[0]).name
    if name in _COLON_EDITORS:
        return [*editor, f"{path}:{line}"]
    if name in _GOTO_EDITORS:
        return [*editor, "--goto", f"{path}:{line}"]
    return [*editor, f"+{line}", path]


def _editor_words(setting: str) -> list[str]:
    """The program and its arguments; a setting naming one program whole may have spaces.

    Raises ``HzError`` (HZU061) when the setting cannot be parsed (an open
    quote) or names no program at all.
    """
    if shutil.which(setting) is not None:
        return [setting]
    try:
        words = shlex.split(setting)
    except ValueError as exc:
        raise HzError("HZU061", f"cannot parse the editor setting ({exc})", repr(setting)) from None
    if not words:
        raise HzError("HZU061", "cannot parse the editor setting (it is empty)", repr(setting))
    return words
