"""The shape of an hz section inside Markdown, and how to find one again.

A section is an invisible begin marker, the visible DRAFT tag line, the text
and an invisible end marker. The markers carry the key, so a section stays
findable after the user deletes the tag line to approve it. Keys are
percent-encoded in the markers: any key survives the round trip and none can
end the HTML comment early.

A document keeps every line with its own line ending, so lines hz does not
touch come back byte for byte; new lines use the file's dominant ending.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from hz_kernel.adapters.documents import codes
from hz_kernel.errors import HzError

_MARKER = re.compile(r"^ {0,3}<!--\s*hz:(begin|end)\s(.*?)-->\s*$")
#: Text every marker line holds: a line without it is not parsed as one.
_MARKER_TEXT = "hz:"
_ATTRIBUTE = re.compile(r"([a-z]+)=(\S+)")
_TAG = re.compile(r"^ {0,3}>.*(?:🧝\s*DRAFT\b|\bhz:[A-Za-z0-9_.-]+\s*$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)(.*)$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_HEINZEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_KEY_SAFE = "@:#/._~+-"
_BOM = "\ufeff"
#: How many documents' scans are kept (``_scanned``).
SCANS_KEPT = 4


def bad_argument(message: str, place: str) -> HzError:
    return HzError(codes.BAD_ARGUMENT, message, place)


def check_key(key: str, place: str) -> None:
    if not key or len(key) > 1000 or _CONTROL.search(key):
        raise bad_argument("a draft key must be 1 to 1000 characters on one line", place)


def check_heinzel(heinzel_id: str, heinzel_name: str, contract_version: int, place: str) -> None:
    if not _HEINZEL_ID.match(heinzel_id):
        raise bad_argument(f"not a usable heinzel id: {heinzel_id!r}", place)
    if not heinzel_name.strip() or _CONTROL.search(heinzel_name):
        raise bad_argument("the heinzel name must be non-empty text on one line", place)
    if contract_version < 1:
        raise bad_argument("the contract version starts at 1", place)


def slugify(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces become hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def heading_title(anchor: str) -> str:
    """A heading whose slug is ``anchor`` (used when the heading does not exist yet)."""
    words = anchor.replace("-", " ")
    return words[:1].upper() + words[1:]


def normalise_anchor(anchor: str, place: str) -> str:
    slug = slugify(anchor)
    if not slug or slugify(heading_title(slug)) != slug:
        raise bad_argument(f"the anchor {anchor!r} is not a heading slug", place)
    return slug


def clean_draft_text(text: str, place: str) -> list[str]:
    """The draft's lines, refusing anything that would read back as a marker or tag line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n")
    if not any(line.strip() for line in lines):
        raise bad_argument("the draft text is empty", place)
    for line in lines:
        if _MARKER.match(line) or _TAG.match(line):
            raise bad_argument(f"the draft text contains a line hz reserves: {line!r}", place)
    return lines


def comparable(text: str) -> str:
    """Text with trailing whitespace and surrounding blank lines removed, for comparison."""
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join([line.rstrip() for line in lines]).strip("\n")


def render_section(
    *,
    key: str,
    heinzel_id: str,
    heinzel_name: str,
    contract_version: int,
    anchor: str | None,
    text_lines: list[str],
) -> list[str]:
    """The lines of a new section, without line endings.

    The blank line after the tag keeps Markdown from folding the draft's first
    paragraph into the tag's quote block.
    """
    where = f" anchor={quote(anchor, safe='-_')}" if anchor else ""
    encoded = quote(key, safe=_KEY_SAFE)
    return [
        f"<!-- hz:begin key={encoded} heinzel={heinzel_id}{where} -->",
        f"> 🧝 DRAFT ({heinzel_name.strip()} v{contract_version}) — edit, then delete this line"
        f" to approve · hz:{heinzel_id}",
        "",
        *text_lines,
        f"<!-- hz:end key={encoded} -->",
    ]


@dataclass(frozen=True)
class Heading:
    slug: str
    line: int


@dataclass(frozen=True)
class Span:
    """Where one complete section lies (0-based line indexes, both markers included)."""

    key: str
    heinzel_id: str
    anchor: str | None
    begin: int
    end: int
    tag_lines: tuple[int, ...]

    @property
    def pending(self) -> bool:
        return bool(self.tag_lines)


@dataclass(frozen=True)
class Scan:
    spans: tuple[Span, ...]
    damaged_keys: frozenset[str]
    """Keys whose begin or end marker stands alone."""
    headings: tuple[Heading, ...]

    def by_key(self, key: str, place: str) -> Span | None:
        """The one section with ``key``; damaged or duplicated markers are an error."""
        found = [span for span in self.spans if span.key == key]
        if key in self.damaged_keys or len(found) > 1:
            raise HzError(
                codes.DAMAGED_SECTION,
                f"the hz markers for key {key!r} are broken or duplicated; restore the"
                " section or delete all of it",
                place,
            )
        return found[0] if found else None

    def heading(self, slug: str) -> Heading | None:
        return next((heading for heading in self.headings if heading.slug == slug), None)


@dataclass(frozen=True)
class _Marker:
    kind: str
    key: str
    attributes: dict[str, str]


def _marker(content: str) -> _Marker | None:
    """A marker line, or None; a hand-mangled key makes the line ordinary text."""
    match = _MARKER.match(content)
    if match is None:
        return None
    attributes = dict(_ATTRIBUTE.findall(match.group(2)))
    try:
        key = unquote(attributes["key"], errors="strict")
    except (KeyError, UnicodeDecodeError):
        return None
    return _Marker(kind=match.group(1), key=key, attributes=attributes)


class Document:
    """A decoded Markdown file as lines that keep their own endings."""

    def __init__(self, text: str) -> None:
        self.bom = text.startswith(_BOM)
        body = text.removeprefix(_BOM)
        parts = body.split("\n")
        self.lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        crlf = body.count("\r\n")
        self.newline = "\r\n" if crlf > body.count("\n") - crlf else "\n"
        self.final_newline = body == "" or body.endswith("\n")

    @classmethod
    def decode(cls, data: bytes, place: str) -> Document:
        if b"\x00" in data:
            raise HzError(
                codes.NOT_UTF8_TEXT, "the document looks binary (it holds NUL bytes)", place
            )
        try:
            return cls(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise HzError(
                codes.NOT_UTF8_TEXT,
                f"the document is not UTF-8 text (bad byte at offset {exc.start})",
                place,
            ) from exc

    def encode(self) -> bytes:
        lines = list(self.lines)
        if lines:
            last = lines[-1].removesuffix("\n").removesuffix("\r")
            lines[-1] = last + self.newline if self.final_newline else last
        return ((_BOM if self.bom else "") + "".join(lines)).encode("utf-8")

    def content(self, index: int) -> str:
        return self.lines[index].removesuffix("\n").removesuffix("\r")

    def is_blank(self, index: int) -> bool:
        return 0 <= index < len(self.lines) and not self.content(index).strip()

    def text_of(self, span: Span) -> str:
        """The section's text: no markers, no tag line, no blank lines around it."""
        lines = self.lines
        body = [
            lines[i].removesuffix("\n").removesuffix("\r")
            for i in range(span.begin + 1, span.end)
            if i not in span.tag_lines
        ]
        while body and not body[0].strip():
            body.pop(0)
        while body and not body[-1].strip():
            body.pop()
        return "\n".join(body)

    def replace(self, start: int, stop: int, contents: list[str]) -> None:
        """Put ``contents`` (lines without endings) in place of lines ``start:stop``."""
        if start > 0 and start == len(self.lines):
            previous = self.lines[start - 1]
            if not previous.endswith("\n"):
                self.lines[start - 1] = previous + self.newline
        self.lines[start:stop] = [content + self.newline for content in contents]

    def remove_section(self, span: Span) -> None:
        """Delete a section and the blank line that separated it, so nothing piles up."""
        del self.lines[span.begin : span.end + 1]
        before = span.begin - 1
        if self.is_blank(before) and (span.begin == len(self.lines) or self.is_blank(span.begin)):
            del self.lines[before]

    def scan(self) -> Scan:
        """Find sections and headings, ignoring anything inside fenced code outside sections.

        Inside a section only its own end marker counts, so a fence the draft
        opened and never closed cannot hide the rest of the document.
        """
        return _scanned(tuple(self.lines))


@functools.lru_cache(maxsize=SCANS_KEPT)
def _scanned(lines: tuple[str, ...]) -> Scan:
    """``Document.scan`` of these lines. A scan depends on the lines alone and is immutable, so
    it is kept for the last few documents: a turn looks at its document before placing (the
    scan the placement repeats) and reads the placed one back (the scan the next turn's look
    repeats)."""
    contents = [line.removesuffix("\n").removesuffix("\r") for line in lines]
    spans: list[Span] = []
    damaged: set[str] = set()
    headings: list[Heading] = []
    slug_counts: dict[str, int] = {}
    fence: str | None = None
    index = 0
    while index < len(contents):
        content = contents[index]
        if fence is not None:
            if content.strip() and set(content.strip()) == {fence[0]}:
                fence = None if len(content.strip()) >= len(fence) else fence
            index += 1
            continue
        if opened := _FENCE.match(content):
            fence = opened.group(1)
            index += 1
            continue
        marker = _marker(content) if _MARKER_TEXT in content else None
        if marker is not None:
            span = _section_from(contents, index, marker) if marker.kind == "begin" else None
            if span is None:
                damaged.add(marker.key)
                index += 1
            else:
                spans.append(span)
                index = span.end + 1
            continue
        if heading := _ATX_HEADING.match(content):
            title = _CLOSING_HASHES.sub("", heading.group(2).strip()).strip()
            slug = slugify(title)
            seen = slug_counts.get(slug, 0)
            slug_counts[slug] = seen + 1
            headings.append(Heading(slug=f"{slug}-{seen}" if seen else slug, line=index))
        index += 1
    return Scan(spans=tuple(spans), damaged_keys=frozenset(damaged), headings=tuple(headings))


def _section_from(contents: list[str], begin: int, opening: _Marker) -> Span | None:
    tag_lines: list[int] = []
    for index in range(begin + 1, len(contents)):
        content = contents[index]
        marker = _marker(content) if _MARKER_TEXT in content else None
        if marker is not None:
            if marker.kind != "end" or marker.key != opening.key:
                return None
            anchor = opening.attributes.get("anchor")
            return Span(
                key=opening.key,
                heinzel_id=opening.attributes.get("heinzel", ""),
                anchor=unquote(anchor) if anchor else None,
                begin=begin,
                end=index,
                tag_lines=tuple(tag_lines),
            )
        if _TAG.match(content):
            tag_lines.append(index)
    return None
