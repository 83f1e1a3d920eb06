"""The review desk's rules, apart from its screen: what a diff compares, how it reads, undo.

The texts come from the kernel's ``draft.review`` (the cockpit never reads
a document to find a section itself, so a remote cockpit shows the same).
Two comparisons: the draft against the section's last approved text (what
changed since last time) and against the draft as placed (what you edited).
Narrow terminals get one unified column, wide ones the two sides.

A rejection is held for a few seconds before it is sent, so ``u`` can take
it back: the kernel has no "unreject" (the section is deleted and the spine
records it), so the honest undo is not sending. A held rejection is on disk
(``<home>/cockpit/held-rejects.json``) before the draft leaves the queue
and stays there until the kernel has it: leaving the desk or quitting sends
it at once, and a cockpit that died meanwhile sends it when it next starts,
only if the draft still waits (never twice, never over a later decision).
Each entry names the cockpit that holds it (pid and process start time):
another cockpit on the same home sends only entries whose holder is dead,
and every change to the file is a read-modify-write under an ``flock``.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from hz_kernel import operations as ops
from hz_kernel.api import DraftReview
from hz_kernel.client import KernelClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_tui import diffing, display
from hz_tui.diffing import Diff, Gap, Line
from hz_tui.files import locked, read_private, write_private
from hz_tui.link import NotConnected
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
HELD_FILE = "held-rejects.json"

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


class Owner(BaseModel):
    """The cockpit process holding a rejection: pid and start time (a reused pid is not it)."""

    model_config = ConfigDict(frozen=True)

    pid: int
    started: float

    @classmethod
    def me(cls) -> Owner:
        import psutil

        return cls(pid=os.getpid(), started=psutil.Process().create_time())

    def alive(self) -> bool:
        import psutil

        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < 1.0
        except psutil.Error:
            return False


class Held(BaseModel):
    """A rejection the user made and the kernel has not been sent yet."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    key: str
    name: str
    owner: Owner | None = None
    """The cockpit holding it; None in files written before owners were kept (left behind)."""

    def left_behind(self) -> bool:
        """Its cockpit ended without sending it."""
        return self.owner is None or not self.owner.alive()


class _HeldFile(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore")

    items: list[Held] = []


class HeldRejects:
    """The held rejections of one home (or one ``--connect`` connection), on disk."""

    def __init__(self, home: Home) -> None:
        self.path = home.root / "cockpit" / HELD_FILE
        self.lock = self.path.with_suffix(".lock")

    def load(self) -> list[Held]:
        """What is held; a file that cannot be read holds nothing (it is replaced on write)."""
        try:
            data = read_private(self.path)
            return [] if data is None else _HeldFile.model_validate_json(data).items
        except (OSError, ValidationError):
            return []

    def hold(self, key: str, name: str) -> None:
        """Hold a rejection as this cockpit's; ``HzError`` (HZU210) when it cannot be saved."""
        me = Owner.me()
        self._update(
            lambda items: [*(h for h in items if h.key != key), Held(key=key, name=name, owner=me)]
        )

    def release(self, key: str) -> bool:
        """Forget a rejection (undone, or the kernel has it); False when it was not held."""
        found = False

        def without(items: list[Held]) -> list[Held]:
            nonlocal found
            kept = [held for held in items if held.key != key]
            found = len(kept) != len(items)
            return kept

        self._update(without)
        return found

    def claim_left_behind(self) -> set[str]:
        """Make the rejections of cockpits that ended this one's, to send; their keys.

        A rejection another running cockpit holds is left alone: its undo is
        still open there. Claiming under the lock means two cockpits starting
        together never both send one.
        """
        if not self.load():
            return set()
        me = Owner.me()
        claimed: set[str] = set()

        def claim(items: list[Held]) -> list[Held]:
            claimed.update(held.key for held in items if held.left_behind())
            return [
                held.model_copy(update={"owner": me}) if held.key in claimed else held
                for held in items
            ]

        try:
            self._update(claim)
        except HzError:
            return set()
        return claimed

    def mine(self) -> list[Held]:
        """The rejections this process holds (its own and the left-behind ones it claimed)."""
        me = Owner.me()
        return [held for held in self.load() if held.owner == me]

    def _update(self, change: Callable[[list[Held]], list[Held]]) -> None:
        """Read, change and write the file under its lock: no other cockpit's entry is lost."""
        with locked(self.lock, code="HZU210", what="the held rejections"):
            before = self.load()
            after = change(before)
            if after != before:
                self._save(after)

    def _save(self, items: Sequence[Held]) -> None:
        if not items:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:
                raise HzError(
                    "HZU210", f"cannot remove it ({exc.strerror})", str(self.path)
                ) from None
            return
        data = orjson.dumps(_HeldFile(items=list(items)).model_dump())
        write_private(
            self.path, data, code="HZU210", what="the rejection to undo", make_folder=True
        )

    async def send(self, client: KernelClient, held: Held, *, again: bool = False) -> Sent:
        """Send one held rejection and say how it went.

        It is released once the kernel has it, or refused it (the refusal is
        the answer); while the kernel cannot be reached it stays held, to be
        sent when the link is back or the cockpit next starts. Sent ``again``
        (an earlier try found no kernel), it is first looked up: a daemon that
        died before answering may have rejected the draft already, and the
        kernel refuses a second reject (``HZU038``) which is then no failure.
        """
        try:
            if again and await _rejected_already(client, held.key):
                self.release(held.key)
                return Sent(held.key, f"{held.name}: draft rejected", "rejected")
            await client.call(ops.REJECT, ops.RejectRequest(ref=held.key))
        except NotConnected:
            return Sent(
                held.key,
                f"HZU240: {held.name}: reject waiting for the kernel (the daemon is away); "
                "it is sent once the daemon is back",
                "unreachable",
            )
        except HzError as exc:
            self.release(held.key)
            return Sent(held.key, f"{held.name}: {exc.one_line()}", "refused")
        self.release(held.key)
        return Sent(held.key, f"{held.name}: draft rejected", "rejected")

    async def send_mine(self, client: KernelClient, keys: Collection[str]) -> list[Sent]:
        """Send again the rejections among ``keys`` this cockpit still holds (a desk that closed
        while the kernel was away left them): the link is back."""
        return [
            await self.send(client, held, again=True) for held in self.mine() if held.key in keys
        ]

    async def send_left_behind(self, client: KernelClient, keys: Collection[str]) -> list[Sent]:
        """Send what a cockpit that ended early still held (``keys``, read at this cockpit's
        start), if the draft still waits; a rejection held since then has its own undo window.

        A draft no longer pending was decided meanwhile (or this rejection
        reached the kernel just before the end): nothing is sent for it.
        """
        items = [held for held in self.load() if held.key in keys]
        if not items:
            return []
        pending = {d.key for d in (await client.call(ops.DRAFTS, ops.Empty())).items}
        sent = []
        for held in items:
            if held.key in pending:
                sent.append(await self.send(client, held))
            else:
                self.release(held.key)
        return sent


async def _rejected_already(client: KernelClient, key: str) -> bool:
    """Whether the draft ``key`` is rejected (a reject sent before reached the kernel)."""
    try:
        found = await client.call(ops.REVIEW, ops.DraftKey(key=key))
    except NotConnected:
        raise
    except HzError:
        return False  # the reject itself says why it cannot be made
    return found.status == "rejected"


def unsent_note(home: Home) -> str | None:
    """The line a quitting cockpit leaves on stderr when rejections it held were not sent."""
    count = len(HeldRejects(home).mine())
    if not count:
        return None
    what = "rejection waits" if count == 1 else "rejections wait"
    return (
        f"HZU246: {count} {what} (the kernel could not be reached) "
        "and will be sent by the next cockpit on this home\n"
    )


@dataclass(frozen=True)
class Sent:
    """How sending one held rejection went: its draft, result line and outcome."""

    key: str
    line: str
    outcome: Literal["rejected", "refused", "unreachable"]

    @property
    def severity(self) -> Literal["information", "warning", "error"]:
        return _SEVERITY[self.outcome]


_SEVERITY: dict[str, Literal["information", "warning", "error"]] = {
    "rejected": "information",
    "unreachable": "warning",
    "refused": "error",
}
