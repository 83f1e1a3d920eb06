"""Reading a ``.prose.md`` file: the frontmatter as plain values with their lines, and the body.

PyYAML's composer gives every node a mark; this module turns nodes into
plain Python values itself, so it can refuse what a contract never needs
(anchors, aliases, custom tags, duplicate keys, deep nesting) before any of
it is expanded, and so every value keeps the file line an error should name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    NodeEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from hz_kernel.contracts.model import KNOWN_SECTIONS, ContractBody, ContractError, ContractSection
from hz_kernel.store.fsutil import read_nofollow

MAX_CONTRACT_BYTES = 256 * 1024
MAX_FRONTMATTER_CHARS = 64 * 1024
MAX_YAML_DEPTH = 16
MAX_YAML_EVENTS = 20_000

KeyPath = tuple[str | int, ...]

_OPEN = re.compile(r"---[ \t]*")
_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_SURROGATE = re.compile(r"[\ud800-\udfff]")

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"


def _tag(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


def at(source: str, line: int) -> str:
    """The ``place`` of an error: the source and a 1-based line."""
    return f"{source}:{max(line, 1)}"


def line_of_offset(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def read_contract_file(path: Path) -> str:
    """A contract file's text, refusing symlinks, oversized files and bytes that are not UTF-8."""
    source = str(path)
    try:
        data = read_nofollow(path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ContractError("HZC008", f"cannot read the contract file ({reason})", source) from None
    if len(data) > MAX_CONTRACT_BYTES:
        raise ContractError(
            "HZC003", f"the contract is larger than {MAX_CONTRACT_BYTES // 1024} KiB", at(source, 1)
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ContractError("HZC004", "the contract is not UTF-8 text", at(source, line)) from None


def check_text(text: str, source: str) -> str:
    """Refuse what is not a plausible text file, then normalise line endings to ``\\n``."""
    if len(text) > MAX_CONTRACT_BYTES or len(text.encode("utf-8", "surrogatepass")) > (
        MAX_CONTRACT_BYTES
    ):
        raise ContractError(
            "HZC003", f"the contract is larger than {MAX_CONTRACT_BYTES // 1024} KiB", at(source, 1)
        )
    surrogate = _SURROGATE.search(text)
    nul = text.find("\x00")
    if surrogate or nul >= 0:
        offset = surrogate.start() if surrogate else nul
        reason = "characters that are not valid Unicode" if surrogate else "a NUL byte"
        raise ContractError(
            "HZC004",
            f"the contract is not text: it contains {reason}",
            at(source, line_of_offset(text, offset)),
        )
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class SplitText:
    """The frontmatter's YAML and the body, each with the file line it starts on."""

    yaml_text: str
    yaml_first_line: int
    body: str
    body_first_line: int
    last_line: int


def split_frontmatter(text: str, source: str) -> SplitText:
    """Cut a normalised contract text at its ``---`` lines."""
    lines = text.split("\n")
    if not _OPEN.fullmatch(lines[0]):
        raise ContractError(
            "HZC001",
            "a contract starts with a line '---' that opens its frontmatter "
            "(name, hz table), closed by another '---' line",
            at(source, 1),
        )
    closing = next((i for i in range(1, len(lines)) if _CLOSE.fullmatch(lines[i])), None)
    if closing is None:
        raise ContractError(
            "HZC001",
            "the frontmatter opened on line 1 is never closed by a '---' line",
            at(source, 1),
        )
    yaml_text = "\n".join(lines[1:closing])
    if len(yaml_text) > MAX_FRONTMATTER_CHARS:
        raise ContractError(
            "HZC003",
            f"the frontmatter is larger than {MAX_FRONTMATTER_CHARS // 1024} KiB",
            at(source, 2),
        )
    return SplitText(
        yaml_text=yaml_text,
        yaml_first_line=2,
        body="\n".join(lines[closing + 1 :]),
        body_first_line=closing + 2,
        last_line=len(lines),
    )


@dataclass
class Located:
    """Plain values from YAML, with the file line of every key and value by key path."""

    value: Any
    value_lines: dict[KeyPath, int] = field(default_factory=dict)
    key_lines: dict[KeyPath, int] = field(default_factory=dict)

    def line(self, path: KeyPath, *, prefer_key: bool = False) -> int:
        """The line of ``path``, or of its nearest ancestor that exists in the file."""
        probe = path
        while probe:
            first, second = (
                (self.key_lines, self.value_lines)
                if prefer_key
                else (self.value_lines, self.key_lines)
            )
            if probe in first:
                return first[probe]
            if probe in second:
                return second[probe]
            probe = probe[:-1]
            prefer_key = True
        return self.value_lines.get((), 1)


class _Loader:
    """Turns a composed YAML document into ``Located`` values, with lines counted in the file."""

    def __init__(self, source: str, first_line: int) -> None:
        self.source = source
        self.offset = first_line
        self.located = Located(value=None)
        self.scalars = SafeConstructor()

    def line(self, node: Node) -> int:
        return node.start_mark.line + self.offset

    def error(self, code: str, message: str, node: Node) -> ContractError:
        return ContractError(code, message, at(self.source, self.line(node)))

    def convert(self, node: Node, path: KeyPath) -> Any:
        self.located.value_lines[path] = self.line(node)
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ:
                raise self.error(
                    "HZC012", f"YAML tags like {_tag(node.tag)} are not supported", node
                )
            return [self.convert(item, (*path, index)) for index, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            if node.tag != _MAP:
                raise self.error(
                    "HZC012", f"YAML tags like {_tag(node.tag)} are not supported", node
                )
            return self.mapping(node, path)
        raise self.error("HZC012", "this YAML value is not supported", node)

    def mapping(self, node: MappingNode, path: KeyPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag != _STR:
                what = "merge keys (<<)" if key_node.tag.endswith(":merge") else "keys"
                raise self.error(
                    "HZC012",
                    f"{what} must be plain text here"
                    + ("" if what != "keys" else "; quote a key that looks like a number"),
                    key_node,
                )
            key = key_node.value
            if key in result:
                raise self.error(
                    "HZC014", f"the key {key!r} appears twice in the same table", key_node
                )
            self.located.key_lines[(*path, key)] = self.line(key_node)
            result[key] = self.convert(value_node, (*path, key))
        return result

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag in (_STR, _TIMESTAMP):
            return node.value
        if node.tag == _NULL:
            return None
        try:
            if node.tag == _BOOL:
                return self.scalars.construct_yaml_bool(node)
            if node.tag == _INT:
                return self.scalars.construct_yaml_int(node)
            if node.tag == _FLOAT:
                return self.scalars.construct_yaml_float(node)
        except (ValueError, OverflowError):
            raise self.error(
                "HZC012", f"the number {node.value[:40]!r} is too large", node
            ) from None
        raise self.error(
            "HZC012", f"YAML tags like {_tag(node.tag)} are not supported; write plain values", node
        )


def _yaml_error_line(exc: yaml.YAMLError, yaml_text: str) -> int:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    position = getattr(exc, "position", None)
    if isinstance(position, int):
        return line_of_offset(yaml_text, position)
    return 1


def _syntax_error(exc: yaml.YAMLError, split: SplitText, source: str) -> ContractError:
    yaml_line = _yaml_error_line(exc, split.yaml_text)
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or "unreadable"
    lines = split.yaml_text.split("\n")
    text_at = lines[yaml_line - 1] if 0 < yaml_line <= len(lines) else ""
    hint = ""
    if re.match(r"\s*schedule:\s*\*", text_at):
        hint = "; quote a schedule that starts with '*', like schedule: \"*/15 * * * *\""
    return ContractError(
        "HZC002",
        f"the frontmatter is not valid YAML ({problem}){hint}",
        at(source, yaml_line + split.yaml_first_line - 1),
    )


def load_frontmatter(split: SplitText, source: str) -> Located:
    """Parse the frontmatter into ``Located`` values; every failure is a ``ContractError``."""

    def place_of(yaml_line: int) -> str:
        return at(source, yaml_line + split.yaml_first_line)

    try:
        depth = 0
        for count, event in enumerate(yaml.parse(split.yaml_text, Loader=yaml.SafeLoader)):
            line = event.start_mark.line if event.start_mark else 0
            if count > MAX_YAML_EVENTS:
                raise ContractError("HZC005", "the frontmatter has too many values", place_of(line))
            if isinstance(event, AliasEvent) or (
                isinstance(event, NodeEvent) and event.anchor is not None
            ):
                raise ContractError(
                    "HZC005",
                    "YAML anchors and aliases (&name, *name) are not allowed in a contract; "
                    "write each value out",
                    place_of(line),
                )
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise ContractError(
                        "HZC005",
                        f"the frontmatter nests deeper than {MAX_YAML_DEPTH} levels",
                        place_of(line),
                    )
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
        root = yaml.compose(split.yaml_text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, split, source) from None
    loader = _Loader(source, split.yaml_first_line)
    if root is None:
        return loader.located
    loader.located.value = loader.convert(root, ())
    return loader.located


# --- the body -------------------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_FENCE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})")
_CANONICAL = {title.casefold(): title for title in KNOWN_SECTIONS}


def strip_comments(text: str) -> str:
    """Remove HTML comments, keeping their line breaks so line numbers still match the file."""
    return _COMMENT.sub(lambda match: "\n" * match.group(0).count("\n"), text)


def heading_title(line: str) -> str | None:
    """The title of a level-3 ATX heading (``### Goal`` or ``### Goal ###``), else None.

    Written without a regular expression so a long line of spaces stays linear.
    """
    text = line.lstrip(" ")
    if len(line) - len(text) > 3 or not text.startswith("###") or text.startswith("####"):
        return None
    rest = text[3:]
    if rest and rest[0] not in " \t":
        return None
    title = rest.strip(" \t")
    without_closing = title.rstrip("#")
    if not without_closing:
        return ""
    if without_closing != title and without_closing[-1] in " \t":
        return without_closing.rstrip(" \t")
    return title


@dataclass(frozen=True)
class ParsedBody:
    body: ContractBody
    heading_lines: dict[str, int]


def parse_body(text: str, first_line: int, source: str) -> ParsedBody:
    """Split the body at ``###`` headings outside code fences; comments are dropped."""
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    heading_lines: dict[str, int] = {}
    fence: str | None = None
    for index, line in enumerate(strip_comments(text).split("\n")):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group("fence")
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        raw_title = None if fence is not None or fence_match else heading_title(line)
        if raw_title is None:
            (sections[-1][1] if sections else preamble).append(line)
            continue
        line_number = first_line + index
        if not raw_title:
            raise ContractError("HZC046", "a ### heading needs a title", at(source, line_number))
        spaced = " ".join(raw_title.split())
        title = _CANONICAL.get(spaced.casefold(), spaced)
        if title.casefold() in heading_lines:
            raise ContractError(
                "HZC046",
                f"the section '### {title}' appears twice (first on line "
                f"{heading_lines[title.casefold()]})",
                at(source, line_number),
            )
        heading_lines[title.casefold()] = line_number
        sections.append((title, []))
    body = ContractBody(
        preamble="\n".join(preamble).strip(),
        sections=tuple(
            ContractSection(title=title, text="\n".join(lines).strip()) for title, lines in sections
        ),
    )
    return ParsedBody(body=body, heading_lines=heading_lines)
