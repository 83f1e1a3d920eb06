"""Drafts placed in real Markdown files, found again by key, approved by deleting a line.

The document is the user's: hz only ever rewrites its own sections, and a
rewrite is computed from the bytes on disk and committed only if those bytes
are still there (see ``files``). Every call reads the file afresh, so the
class holds configuration and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from hz_kernel.adapters.documents import codes
from hz_kernel.adapters.documents.files import (
    BeforeCommit,
    commit_if_unchanged,
    directory_lock,
    read_snapshot,
)
from hz_kernel.adapters.documents.layout import (
    Document,
    Span,
    check_heinzel,
    check_key,
    clean_draft_text,
    comparable,
    heading_title,
    normalise_anchor,
    render_section,
)
from hz_kernel.adapters.documents.models import (
    DraftChange,
    DraftState,
    DraftStatus,
    FoundSection,
    PlacedDraft,
)
from hz_kernel.errors import HzError

T = TypeVar("T")
Plan = Callable[[Document | None], tuple[Document | None, T]]
"""Given the current document (None if absent): what to write (None: nothing) and the answer."""


class MarkdownDocuments:
    """The documents adapter for Markdown files.

    ``before_commit`` is called with the path after a new version is staged
    and before the final comparison; it exists so tests (and tracing) can act
    as a user saving at the worst moment. ``max_attempts`` bounds how often a
    change is recomputed when the user keeps saving.
    """

    def __init__(self, *, max_attempts: int = 5, before_commit: BeforeCommit | None = None) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._max_attempts = max_attempts
        self._before_commit = before_commit

    def place_draft(
        self,
        path: Path,
        anchor: str | None,
        *,
        key: str,
        heinzel_name: str,
        heinzel_id: str,
        contract_version: int,
        text: str,
    ) -> PlacedDraft:
        """Write the draft section, once per key, replacing this heinzel's pending draft."""
        place = str(path)
        check_key(key, place)
        check_heinzel(heinzel_id, heinzel_name, contract_version, place)
        slug = normalise_anchor(anchor, place) if anchor is not None else None
        section = render_section(
            key=key,
            heinzel_id=heinzel_id,
            heinzel_name=heinzel_name,
            contract_version=contract_version,
            anchor=slug,
            text_lines=clean_draft_text(text, place),
        )

        def plan(document: Document | None) -> tuple[Document | None, PlacedDraft]:
            target = document if document is not None else Document("")
            scan = target.scan()
            if scan.by_key(key, place) is not None:
                return None, self._placed(path, target, key, True, [], [])
            mine = [span for span in scan.spans if span.heinzel_id == heinzel_id]
            pending = [span for span in mine if span.pending and span.anchor == slug]
            replaced: list[Span] = []
            if pending:
                _replace_sections(target, pending, section)
            elif slug is not None and (heading := scan.heading(slug)) is not None:
                under = _first_non_blank(target, heading.line + 1)
                replaced = [span for span in mine if span.begin == under]
                if replaced:
                    _replace_sections(target, replaced, section)
                else:
                    _insert_under(target, heading.line, section)
            else:
                _append(target, section, [] if slug is None else [f"## {heading_title(slug)}"])
            superseded = [span.key for span in pending]
            approved = [span.key for span in replaced]
            return target, self._placed(path, target, key, False, superseded, approved)

        return self._rewrite(path, plan)

    def find(self, path: Path, key: str) -> FoundSection | None:
        """The section with exactly this key, or None; the effect ledger asks this after a crash."""
        check_key(key, str(path))
        document = self._read(path)
        if document is None:
            return None
        span = document.scan().by_key(key, str(path))
        return None if span is None else _found(document, span)

    def draft_state(self, path: Path, key: str, *, placed_text: str) -> DraftState:
        """Read what the user did with a placed draft.

        A key absent from an existing file reads as rejected: the caller asks
        only about drafts it placed, and the file alone cannot tell "deleted"
        from "never written" (``find`` answers whether a placement happened).
        """
        check_key(key, str(path))
        document = self._read(path)
        if document is None:
            return DraftState(key=key, status=DraftStatus.MISSING, text=None)
        span = document.scan().by_key(key, str(path))
        if span is None:
            return DraftState(key=key, status=DraftStatus.REJECTED, text=None)
        text = document.text_of(span)
        if span.pending:
            same = comparable(text) == comparable(placed_text)
            return DraftState(
                key=key, status=DraftStatus.PLACED if same else DraftStatus.EDITED, text=text
            )
        if not comparable(text):
            return DraftState(key=key, status=DraftStatus.REJECTED, text=None)
        return DraftState(key=key, status=DraftStatus.APPROVED, text=text)

    def pending_sections(self, path: Path) -> list[FoundSection]:
        """Every section whose DRAFT tag line is still there, in document order."""
        document = self._read(path)
        if document is None:
            return []
        return [_found(document, span) for span in document.scan().spans if span.pending]

    def approve_draft(self, path: Path, key: str) -> DraftChange:
        """Delete the tag line as the user would (``hz approve``); a repeat changes nothing."""
        place = str(path)
        check_key(key, place)

        def plan(document: Document | None) -> tuple[Document | None, DraftChange]:
            span = None if document is None else document.scan().by_key(key, place)
            if document is None or span is None:
                raise HzError(codes.NO_SUCH_SECTION, f"no hz section with key {key!r}", place)
            for line in reversed(span.tag_lines):
                del document.lines[line]
            answer = _change(document, key, changed=span.pending, place=place)
            return (document if span.pending else None), answer

        return self._rewrite(path, plan)

    def remove_draft(self, path: Path, key: str) -> DraftChange:
        """Delete the whole section (``hz reject``); a section already gone is fine."""
        place = str(path)
        check_key(key, place)

        def plan(document: Document | None) -> tuple[Document | None, DraftChange]:
            span = None if document is None else document.scan().by_key(key, place)
            if document is None or span is None:
                return None, _change(document, key, changed=False, place=place)
            document.remove_section(span)
            return document, _change(document, key, changed=True, place=place)

        return self._rewrite(path, plan)

    def _rewrite(self, path: Path, plan: Plan[T]) -> T:
        """Read, plan, commit if the file did not move; recompute on a concurrent save."""
        place = str(path)
        with directory_lock(path.parent):
            for _ in range(self._max_attempts):
                snapshot = read_snapshot(path)
                current = None if snapshot is None else Document.decode(snapshot.data, place)
                changed, answer = plan(current)
                if changed is None:
                    return answer
                written = commit_if_unchanged(
                    path, changed.encode(), expected=snapshot, before_commit=self._before_commit
                )
                if written:
                    return answer
        raise HzError(
            codes.KEEPS_CHANGING,
            f"the document changed on every one of {self._max_attempts} attempts; try again"
            " when it is not being saved",
            place,
        )

    def _placed(
        self,
        path: Path,
        document: Document,
        key: str,
        already_there: bool,
        superseded: list[str],
        replaced: list[str],
    ) -> PlacedDraft:
        span = document.scan().by_key(key, str(path))
        if span is None:
            raise HzError(
                codes.DAMAGED_SECTION, "the placed section cannot be read back", str(path)
            )
        return PlacedDraft(
            path=path,
            key=key,
            already_there=already_there,
            superseded=superseded,
            replaced=replaced,
            section=_found(document, span),
        )

    def _read(self, path: Path) -> Document | None:
        snapshot = read_snapshot(path)
        return None if snapshot is None else Document.decode(snapshot.data, str(path))


def _found(document: Document, span: Span) -> FoundSection:
    return FoundSection(
        key=span.key,
        heinzel_id=span.heinzel_id,
        anchor=span.anchor,
        pending=span.pending,
        text=document.text_of(span),
        first_line=span.begin + 1,
        last_line=span.end + 1,
    )


def _change(document: Document | None, key: str, *, changed: bool, place: str) -> DraftChange:
    if document is None:
        return DraftChange(key=key, changed=changed, status=DraftStatus.MISSING, text=None)
    span = document.scan().by_key(key, place)
    if span is None:
        return DraftChange(key=key, changed=changed, status=DraftStatus.REJECTED, text=None)
    text = document.text_of(span)
    if not comparable(text):
        return DraftChange(key=key, changed=changed, status=DraftStatus.REJECTED, text=None)
    return DraftChange(key=key, changed=changed, status=DraftStatus.APPROVED, text=text)


def _replace_sections(document: Document, spans: list[Span], section: list[str]) -> None:
    """Put ``section`` where the first span is and delete the rest, bottom up so indexes hold."""
    first = min(spans, key=lambda span: span.begin)
    for span in sorted(spans, key=lambda span: span.begin, reverse=True):
        if span is first:
            document.replace(span.begin, span.end + 1, section)
        else:
            document.remove_section(span)


def _first_non_blank(document: Document, start: int) -> int:
    index = start
    while document.is_blank(index):
        index += 1
    return index


def _insert_under(document: Document, heading_line: int, section: list[str]) -> None:
    """Put the section right below a heading, with a blank line on each side."""
    start = heading_line + 1
    lead = [] if document.is_blank(start) else [""]
    if not lead:
        start += 1
    trailing = [""] if start < len(document.lines) and not document.is_blank(start) else []
    document.replace(start, start, [*lead, *section, *trailing])


def _append(document: Document, section: list[str], heading: list[str]) -> None:
    """Add the section (after an optional heading) at the end, separated by a blank line."""
    lead = [""] if document.lines and not document.is_blank(len(document.lines) - 1) else []
    spacer = [""] if heading else []
    end = len(document.lines)
    document.replace(end, end, [*lead, *heading, *spacer, *section])
