"""The ``document`` source: a Markdown file, or the part of it under one heading.

This is how one heinzel reads another's approved output: the section under
a heading, fingerprinted, so the reader wakes only when that text moved.
Only ATX headings (``#`` to ``######``) count, and lines inside fenced code
blocks are never taken for headings.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.adapters.sources.base import FetchResult, SourceRequest, resolve_path, sha256_hex
from hz_kernel.errors import HzError

MAX_DOCUMENT_BYTES = 8 << 20
HEADING = re.compile(r"^ {0,3}(?P<marks>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")


class SectionArgs(BaseModel):
    """``anchor`` is a heading's text or its slug (``Release notes`` or ``release-notes``)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    path: str = Field(min_length=1)
    anchor: str | None = Field(default=None, min_length=1)


def slugify(heading: str) -> str:
    """The usual Markdown anchor: lower case, punctuation dropped, spaces to hyphens."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of each ATX heading outside fenced code."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for index, line in enumerate(lines):
        opening = FENCE.match(line)
        if fence is not None:
            if opening is not None and opening.group("fence").startswith(fence):
                fence = None
            continue
        if opening is not None:
            fence = opening.group("fence")
            continue
        heading = HEADING.match(line)
        if heading is not None:
            found.append(
                (index, len(heading.group("marks")), (heading.group("text") or "").strip())
            )
    return found


def section_text(text: str, anchor: str) -> str | None:
    """The lines under the first heading matching ``anchor``, up to the next one as high."""
    wanted = anchor.strip().lstrip("#").strip()
    lines = text.splitlines()
    found = headings(lines)
    for position, (index, level, title) in enumerate(found):
        if title.casefold() != wanted.casefold() and slugify(title) != wanted.lower():
            continue
        end = next(
            (later for later, later_level, _ in found[position + 1 :] if later_level <= level),
            len(lines),
        )
        return "\n".join(lines[index + 1 : end]).strip("\n")
    return None


class DocumentSource:
    """Reads a Markdown file; a relative ``path`` resolves against ``base_dir``."""

    kind = "document"
    methods = frozenset({"section"})
    replay_safe = True

    def __init__(self, base_dir: Path | None = None) -> None:
        self.base_dir = base_dir

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None = None
    ) -> FetchResult:
        args = request.parse_args(SectionArgs)
        path = resolve_path(args.path, self.base_dir)
        place = str(path)
        text = read_markdown(path)
        if args.anchor is not None:
            section = section_text(text, args.anchor)
            if section is None:
                raise HzError("HZT061", f"no heading {args.anchor!r} in the document", place)
            text = section
        return FetchResult(
            request=request,
            facets={"section": sha256_hex(text)},
            content={"section": text},
            as_of=now,
        )


def read_markdown(path: Path) -> str:
    """Read a whole UTF-8 document, with clear errors for the ways that can fail."""
    place = str(path)
    try:
        if not path.is_file():
            raise HzError("HZT060", "the document does not exist or is not a file", place)
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise HzError("HZT063", f"the document is over {MAX_DOCUMENT_BYTES} bytes", place)
        data = path.read_bytes()
    except OSError as exc:
        raise HzError("HZT060", f"cannot read the document: {exc.strerror}", place) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HzError("HZT062", "the document is not UTF-8 text", place) from None
