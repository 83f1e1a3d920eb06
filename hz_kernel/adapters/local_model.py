"""The built-in local model: deterministic, offline, no key.

It is what a fresh machine runs and what tests use. It is a pydantic-ai
``FunctionModel`` whose stream function reads the framing the context builder
writes (the ``render_*`` helpers of ``framing``, re-exported here)
and answers through the agent's output tools, streaming the arguments in
chunks, so the same agent code serves it and real providers.

What it writes is computed, never invented: a draft groups the items of each
input under a heading, lessons come from a diff of the placed draft against
the approved text (rules naming the pattern, never a line) or from the reason
given with a rejection, a summary carries forward what the previous one held.
"""

from __future__ import annotations

import asyncio
import difflib
import html
import json
import math
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
    FunctionStreamedResponse,
)
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.usage import RequestUsage

from hz_kernel.adapters.framing import LESSONS_HEADING, FramedInput, unescape_body
from hz_kernel.engine.outcome import (
    LESSON_MAX,
    REASON_MAX,
    REPORT_MAX,
    AmendmentOutcome,
    DraftOutcome,
    Lesson,
    LessonsOutcome,
    NothingOutcome,
    SummaryOutcome,
)
from hz_kernel.engine.tools.base import roots_in

LOCAL_MODEL_NAME = "hz-local"
CALL_ID = "hz-local-outcome"
CHUNK_CHARS = 48
"""The first chunks' size: the start of an answer streams as a provider's would."""
EVEN_CHUNKS = 4
MAX_CHUNK_CHARS = 1536
"""After ``EVEN_CHUNKS`` chunks each is twice the last, up to this: a long draft streams in
a dozen pieces, not in a hundred, as providers send larger deltas once an answer flows. A
paced model (``delay_ms``, ``hold_file``: demos and tests that watch a stream) keeps every
chunk at ``CHUNK_CHARS``, so its answer flows for as long as it did."""
HOLD_POLL_S = 0.05

# --- reading the framing back ------------------------------------------------------------

_ATTRS = re.compile(r'(\w+)="([^"]*)"')
_INPUTS = re.compile(r"<inputs(?P<attrs>(?:\s[^>]*)?)>(?P<body>.*?)</inputs>", re.DOTALL)


def _element(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<{tag}(?P<attrs>(?:\s[^>]*)?)>\n?(?P<body>[^<]*?)\n?</{tag}>")


_INPUT = _element("input")


_STEERING = _element("steering")
_DRAFT_AS_PLACED = _element("draft_as_placed")
_APPROVED_TEXT = _element("approved_text")
_REJECTION_REASON = _element("rejection_reason")
_SUMMARY_REQUEST = _element("summary_request")
_SUMMARY = _element("summary")
_DISCOVERED = _element("discovered")


def _attrs(raw: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in _ATTRS.findall(raw)}


@dataclass
class _Request:
    """What the local model found in the conversation, latest framing last."""

    kind: str = "none"
    output: str = "section"
    inputs: list[FramedInput] = field(default_factory=list)
    steering: list[str] = field(default_factory=list)
    draft_as_placed: str = ""
    approved_text: str = ""
    rejection_reason: str = ""
    summary_attrs: dict[str, str] = field(default_factory=dict)
    wants: str = ""
    previous_summary: SummaryOutcome | None = None
    input_names: list[str] = field(default_factory=list)
    discovered: dict[str, str] = field(default_factory=dict)
    proposal: str = ""


def _user_texts(messages: Sequence[ModelMessage]) -> Iterable[str]:
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if not isinstance(part, UserPromptPart):
                continue
            if isinstance(part.content, str):
                yield part.content
            else:
                yield "\n".join(item for item in part.content if isinstance(item, str))


def _read(messages: Sequence[ModelMessage]) -> _Request:
    request = _Request()
    for text in _user_texts(messages):
        request.steering.extend(unescape_body(m["body"]) for m in _STEERING.finditer(text))
        for match in _SUMMARY.finditer(text):
            try:
                request.previous_summary = SummaryOutcome.model_validate_json(
                    unescape_body(match["body"])
                )
            except ValidationError:
                request.previous_summary = None
        for match in _INPUTS.finditer(text):
            request.kind = "draft"
            request.output = _attrs(match["attrs"]).get("output", "section")
            request.inputs = []
            for element in _INPUT.finditer(match["body"]):
                attrs = _attrs(element["attrs"])
                request.inputs.append(
                    FramedInput(
                        name=attrs.get("name", "input"),
                        source=attrs.get("source", ""),
                        content=unescape_body(element["body"]),
                        moved=attrs.get("moved") == "true",
                    )
                )
            request.input_names.extend(item.name for item in request.inputs)
        placed, approved = _DRAFT_AS_PLACED.search(text), _APPROVED_TEXT.search(text)
        if placed and approved:
            request.kind = "approval"
            request.draft_as_placed = unescape_body(placed["body"])
            request.approved_text = unescape_body(approved["body"])
        if rejection := _REJECTION_REASON.search(text):
            request.kind = "rejection"
            request.rejection_reason = unescape_body(rejection["body"])
        if found := _DISCOVERED.search(text):
            request.discovered = _attrs(found["attrs"])
            request.proposal = unescape_body(found["body"])
        if summary := _SUMMARY_REQUEST.search(text):
            request.kind = "summary"
            request.summary_attrs = _attrs(summary["attrs"])
            request.wants = unescape_body(summary["body"])
    return request


# --- drafts ------------------------------------------------------------------------------

_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        (
            *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"),
            *("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen"),
            *("seventeen", "eighteen", "nineteen", "twenty"),
        )
    )
}
_BELOW = re.compile(r"\b(?:under|fewer than|less than|below)\s+(\w+)\s+lines?\b", re.I)
_AT_MOST = re.compile(
    r"\b(?:at most|no more than|max(?:imum)?(?: of)?|up to|within|in)\s+(\w+)\s+lines?\b", re.I
)
_N_LINES = re.compile(r"\b(\w+)\s+lines?\b", re.I)
_LINE_CAPS = ((_BELOW, -1), (_AT_MOST, 0), (_N_LINES, 0))
_SHORTER = re.compile(r"\b(?:shorter|shorten|concise|briefer|halve|trim)\b", re.I)


def _number(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _NUMBER_WORDS.get(word.lower())


@dataclass(frozen=True)
class _Brevity:
    line_cap: int | None = None
    halve: bool = False


def _line_cap(text: str) -> int | None:
    for pattern, shift in _LINE_CAPS:
        if (match := pattern.search(text)) and (number := _number(match[1])) is not None:
            return max(1, number + shift)
    return None


def _brevity(steering: Sequence[str]) -> _Brevity:
    """Read length requests from steering: a line cap ("under ten lines") or "shorter"."""
    cap: int | None = None
    halve = False
    for text in steering:
        if (found := _line_cap(text)) is not None:
            cap = found if cap is None else min(cap, found)
        elif _SHORTER.search(text):
            halve = True
    return _Brevity(line_cap=cap, halve=halve)


def _title(name: str) -> str:
    words = re.sub(r"[-_.]+", " ", name).strip()
    return words[:1].upper() + words[1:] if words else name


def _items(content: str) -> list[str]:
    """The distinct non-empty lines of an input, bullets and headings stripped."""
    found: dict[str, None] = {}
    for raw in content.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "```")):
            continue
        item = _BULLET.sub("", line).strip()
        if item:
            found.setdefault(item)
    return list(found)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_GIT_ITEM = re.compile(r"^[0-9a-f]{7,40} \S+ [^:]*: (?P<title>.+)$")
_GIT_SHA = re.compile(r"^(?P<sha>[0-9a-f]{7,40}) \S+ [^:]*: ")
_KIND_OF_ITEM = re.compile(
    r"^(feat|fix|chore|docs|ci|build|test|tests|refactor|style|perf|deps|revert|wip)"
    r"(?:\([^)]*\))?!?:\s*",
    re.I,
)


def _subject(item: str) -> str:
    """A commit line's title (the git source writes ``sha date author: title``); else the item."""
    match = _GIT_ITEM.match(item)
    return match["title"] if match else item


def _kind(item: str) -> str | None:
    """The conventional-commit kind an item carries (``docs`` for ``docs: ...``), if any."""
    match = _KIND_OF_ITEM.match(_subject(_BULLET.sub("", item.strip())))
    return match[1].lower() if match else None


# --- the outline the contract names ------------------------------------------------------


_MAINTAINS = re.compile(r"^### Maintains[ \t]*\n(?P<body>.*?)(?=^#{1,3} |\Z)", re.M | re.S)
_WRITTEN_HEADING = re.compile(r"`#{1,6}\s+([^`\n]+?)\s*`")
_GROUPED_UNDER = re.compile(
    r"\b(?:grouped|sorted|split|organi[sz]ed|arranged|filed)\s+(?:under|into)\s+"
    r"(?:the\s+)?(?:headings?\s+|sections?\s+)?(?P<list>[^.;:()`]+)",
    re.I,
)
_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def maintains_of(instructions: str) -> str:
    """The contract's ``Maintains`` section as the context renders it, or ``""``."""
    match = _MAINTAINS.search(instructions)
    return match["body"].strip() if match else ""


def outline_of(maintains: str) -> list[str]:
    """The headings a ``Maintains`` section names, in its order; none when it names none.

    Headings written as Markdown in backticks (`` `### Added` ``) count, and so
    does a capitalised list after "grouped under" ("grouped under Added,
    Changed and Fixed"); "grouped by theme" names no heading, so the draft
    then invents none beyond one per input.
    """
    named = [match[1] for match in _WRITTEN_HEADING.finditer(maintains)]
    if not named:
        for match in _GROUPED_UNDER.finditer(" ".join(maintains.split())):
            entries = [e.strip() for e in _LIST_SEPARATOR.split(match["list"].strip())]
            entries = [e for e in entries if e]
            if entries and all(e[:1].isupper() for e in entries):
                named.extend(entries)
    return list(dict.fromkeys(named))


_GROUP_WORDS = {
    "added": "added", "new": "added", "features": "added", "feature": "added",
    "fixed": "fixed", "fixes": "fixed", "bugs": "fixed", "bug": "fixed",
    "removed": "removed", "removals": "removed",
    "deprecated": "deprecated", "security": "security",
    "changed": "changed", "changes": "changed", "other": "changed", "misc": "changed",
}  # fmt: skip
_KIND_GROUPS = {"feat": "added", "fix": "fixed", "revert": "removed"}
_VERB_GROUPS = {
    "add": "added", "adds": "added", "added": "added", "introduce": "added", "support": "added",
    "fix": "fixed", "fixes": "fixed", "fixed": "fixed", "repair": "fixed", "resolve": "fixed",
    "remove": "removed", "removes": "removed", "removed": "removed", "drop": "removed",
    "delete": "removed", "deprecate": "deprecated", "deprecates": "deprecated",
}  # fmt: skip


def _group_of(heading: str) -> str | None:
    return next((_GROUP_WORDS[w] for w in _named(heading).split() if w in _GROUP_WORDS), None)


def _classify(item: str, headings: Sequence[str]) -> str:
    """The named heading an item belongs under: by its commit kind when it has one (a
    ``docs:`` line is a change, whatever its verb), else by its first verb, else the
    catch-all (Changed, Other)."""
    subject = _subject(item)
    kind = _kind(item)
    rest = _KIND_OF_ITEM.sub("", subject, count=1)
    verb = next(iter(re.findall(r"[a-z]+", rest.lower())), "")
    if kind is not None:
        wanted = _KIND_GROUPS.get(kind, "changed")
    else:
        wanted = _VERB_GROUPS.get(verb, "changed")
    for heading in headings:
        if _group_of(heading) == wanted:
            return heading
    return next((h for h in headings if _group_of(h) == "changed"), headings[-1])


# --- lessons the draft applies -----------------------------------------------------------

RULE_NO_PREFIX = "Leave the commit-kind prefix off each line."
RULE_PAST_TENSE = "Put the verb that opens a line in the past tense."
RULE_CAPITAL = "Start each line with a capital letter."
RULE_FULL_STOP = "End each line with a full stop."

_LEAVE_OUT_KIND = re.compile(r"^Leave out (\w+) items(?: from the (.+?) section)?\.$")
_LEAVE_OUT_SECTION = re.compile(r"^Leave out the (.+?) section\.$")
_PUT_SECTION = re.compile(r"^Put the (.+?) section (above|below) the (.+?) section\.$")
_NAME_SECTION = re.compile(r"^Name the (.+?) section (.+?) instead\.$")


def lessons_of(instructions: str) -> list[str]:
    """The active lessons as the context lists them, one rule each."""
    start = instructions.rfind(f"{LESSONS_HEADING}\n")
    if start == -1:
        return []
    lessons: list[str] = []
    for line in instructions[start + len(LESSONS_HEADING) + 1 :].splitlines():
        if not line.startswith("- "):
            break
        lessons.append(line[2:].strip())
    return lessons


@dataclass
class _Rules:
    """What the active lessons ask of the next draft, as far as the local model understands."""

    leave_out: list[tuple[str, str | None]] = field(default_factory=list)
    no_tickets: bool = False
    drop: set[str] = field(default_factory=set)
    moves: list[tuple[str, str, str]] = field(default_factory=list)
    renames: dict[str, str] = field(default_factory=dict)
    wording: set[str] = field(default_factory=set)
    brevity: list[str] = field(default_factory=list)


def _rules(lessons: Sequence[str]) -> _Rules:
    rules = _Rules()
    for lesson in lessons:
        if match := _LEAVE_OUT_KIND.match(lesson):
            rules.leave_out.append((match[1].lower(), match[2]))
        elif lesson.startswith("Leave out ticket numbers"):
            rules.no_tickets = True
        elif match := _LEAVE_OUT_SECTION.match(lesson):
            rules.drop.add(match[1])
        elif match := _PUT_SECTION.match(lesson):
            rules.moves.append((match[1], match[2], match[3]))
        elif match := _NAME_SECTION.match(lesson):
            rules.renames[match[1]] = match[2]
        elif lesson in (RULE_NO_PREFIX, RULE_PAST_TENSE, RULE_CAPITAL, RULE_FULL_STOP):
            rules.wording.add(lesson)
        elif lesson.startswith("Keep drafts "):
            rules.brevity.append(lesson)
    return rules


_IRREGULAR_PAST = {
    "build": "built", "do": "did", "find": "found", "get": "got", "give": "gave", "go": "went",
    "keep": "kept", "make": "made", "put": "put", "rebuild": "rebuilt", "rewrite": "rewrote",
    "run": "ran", "send": "sent", "set": "set", "split": "split", "take": "took",
    "write": "wrote", "drop": "dropped", "ship": "shipped", "stop": "stopped", "plan": "planned",
}  # fmt: skip


def _past(verb: str) -> str:
    """The past tense of a base-form verb: the common irregular ones, else the regular rule."""
    if verb in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[verb]
    if verb.endswith("e"):
        return verb + "d"
    if len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def _restyle(item: str, wording: set[str]) -> str:
    """An item in the wording the lessons name; a commit line keeps its sha, date and author."""
    subject = _subject(item)
    lead, text = item[: len(item) - len(subject)], subject
    conventional = _KIND_OF_ITEM.match(text) is not None
    if RULE_NO_PREFIX in wording:
        text = _KIND_OF_ITEM.sub("", text, count=1)
    first = re.match(r"[A-Za-z]+", text)
    if RULE_PAST_TENSE in wording and first and (conventional or first[0].lower() in _VERB_GROUPS):
        word = first[0]
        if not word.lower().endswith("ed") and word.lower() not in _IRREGULAR_PAST.values():
            past = _past(word.lower())
            text = (past[:1].upper() + past[1:] if word[:1].isupper() else past) + text[len(word) :]
    if RULE_CAPITAL in wording and text[:1].islower():
        text = text[:1].upper() + text[1:]
    if RULE_FULL_STOP in wording and text and not text.endswith((".", "!", "?")):
        text += "."
    return lead + text


def _apply_to_items(group: _Group, rules: _Rules) -> None:
    name = _named(group.title)
    left_out = {kind for kind, section in rules.leave_out if section in (None, name)}
    items = (
        [item for item in group.items if _kind(item) not in left_out] if left_out else group.items
    )
    if rules.no_tickets:
        items = [re.sub(r"\s{2,}", " ", _TICKET.sub("", item)).strip(" -,;") for item in items]
    # With no wording rule an item is its own restyling: the call per item is skipped.
    wording = rules.wording
    group.items = [_restyle(item, wording) if wording else item for item in items if item]


def _apply_to_groups(groups: list[_Group], rules: _Rules) -> list[_Group]:
    """Sections left out, renamed and moved as the lessons say."""
    kept = [g for g in groups if _named(g.title) not in rules.drop]
    for moved, relation, other in rules.moves:
        mover = next((g for g in kept if _named(g.title) == moved), None)
        anchor = next((g for g in kept if _named(g.title) == other), None)
        if mover is None or anchor is None or mover is anchor:
            continue
        kept.remove(mover)
        at = kept.index(anchor) + (1 if relation == "below" else 0)
        kept.insert(at, mover)
    for group in kept:
        if (new := rules.renames.get(_named(group.title))) is not None:
            group.title = new[:1].upper() + new[1:]
    return kept


# --- composing the draft ----------------------------------------------------------------


@dataclass
class _Group:
    title: str
    items: list[str]
    moved: bool


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _summary_line(groups: Sequence[_Group], left_out: int) -> str:
    shown = [g for g in groups if g.items]
    count = sum(len(g.items) for g in shown)
    parts = ", ".join(f"{g.title.lower()}: {len(g.items)}" for g in shown)
    line = f"{_plural(count, 'item')} ({parts})" if shown else "Nothing to list"
    moved = [g.title.lower() for g in groups if g.moved]
    if moved:
        line += f"; new since last time: {', '.join(moved)}"
    if left_out:
        line += f"; {left_out} more left out"
    return line + "."


def _render_draft(
    groups: Sequence[_Group], *, summary: bool, compact: bool, left_out: int
) -> list[str]:
    """The draft's lines: its subsections sit one level below the ``##`` section hz keeps."""
    lines = [_summary_line(groups, left_out)] if summary else []
    for group in groups:
        if not group.items:
            continue
        if lines and not compact:
            lines.append("")
        lines.append(f"### {group.title}")
        lines.extend([f"- {item}" for item in group.items])
    return lines


def _outlined(
    ordered: Sequence[tuple[FramedInput, list[str]]], headings: Sequence[str]
) -> list[_Group]:
    """Items under the headings the contract names: an input named by a heading fills it."""
    by_heading = {h: _Group(h, [], False) for h in headings}
    for source, items in ordered:
        named = next((h for h in headings if _named(h) == _named(_title(source.name))), None)
        for item in items:
            target = by_heading[named or _classify(item, headings)]
            target.items.append(item if named else _subject(item))
            target.moved = target.moved or source.moved
    return list(by_heading.values())


def compose_draft(
    output: str,
    inputs: Sequence[FramedInput],
    steering: Sequence[str] = (),
    *,
    maintains: str = "",
    lessons: Sequence[str] = (),
) -> DraftOutcome | NothingOutcome:
    """The draft of the section hz keeps, applying the active lessons.

    When the contract's ``Maintains`` names headings, the draft has exactly
    those (the empty ones left out) in that order and no others; otherwise a
    summary line and one subsection per input, inputs that moved first. It
    never repeats the kept section's own heading. Steering and length lessons
    shorten it.
    """
    # Each input's items, parsed once (the report counts the inputs that had any).
    ordered = [(i, _items(i.content)) for i in inputs if i.moved] + [
        (i, _items(i.content)) for i in inputs if not i.moved
    ]
    inputs_count = sum(1 for _, items in ordered if items)
    headings = outline_of(maintains)
    rules = _rules(lessons)
    if headings:
        groups = _outlined(ordered, headings)
    else:
        groups = [_Group(_title(i.name), items, i.moved) for i, items in ordered]
    if not inputs:
        return NothingOutcome(report="Nothing to draft: the contract reads no inputs.")
    if sum(len(g.items) for g in groups) == 0:
        names = ", ".join(i.name for i in inputs)
        return NothingOutcome(report=_clip(f"Nothing to draft: {names} had no items.", REPORT_MAX))
    for group in groups:
        _apply_to_items(group, rules)
    groups = _apply_to_groups(groups, rules)
    total = sum(len(g.items) for g in groups)
    brevity = _brevity([*rules.brevity, *steering])
    if brevity.halve:
        for group in groups:
            group.items = group.items[: math.ceil(len(group.items) / 2)]
    compact = brevity.halve or brevity.line_cap is not None
    summary = not headings

    def shown() -> int:
        return sum(len(g.items) for g in groups)

    def render() -> list[str]:
        return _render_draft(groups, summary=summary, compact=compact, left_out=total - shown())

    lines = render()
    while brevity.line_cap is not None and len(lines) > brevity.line_cap and shown():
        last = max(i for i, g in enumerate(groups) if g.items)
        groups[last].items.pop()
        lines = render()
    if brevity.line_cap is not None:
        lines = lines[: brevity.line_cap]
    if not shown():
        return NothingOutcome(
            report=_clip(f"Nothing to draft for {output}: lessons left out every item.", REPORT_MAX)
        )
    report = f"Drafted {output}: {_plural(shown(), 'item')} from {_plural(inputs_count, 'input')}"
    if total > shown():
        report += f", {total - shown()} left out"
    return DraftOutcome(
        output=output, text="\n".join(lines) + "\n", report=_clip(report + ".", REPORT_MAX)
    )


# --- lessons from the diff ---------------------------------------------------------------

_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_TICKET = re.compile(r"\b[A-Z][A-Z0-9]+-\d+\b|(?<![\w&])#\d+\b")
_DESCRIPTIVE = re.compile(r"(?:ly|ful|ous|ive|able|ible|est|ic|al)$", re.I)
_COMMON_ADJECTIVES = frozenset(
    (
        *("great", "good", "big", "huge", "major", "minor", "key", "important", "exciting"),
        *("amazing", "awesome", "new", "nice", "significant", "quick", "small", "massive"),
        *("critical", "fantastic", "excellent", "impressive", "incredible", "solid", "strong"),
        "busy",
    )
)


@dataclass
class _Section:
    heading: str | None
    title: str
    body: list[str]


def _sections(text: str) -> list[_Section]:
    sections = [_Section(None, "", [])]
    for line in text.splitlines():
        if match := _HEADING.match(line):
            sections.append(_Section(line, match[1], []))
        else:
            sections[-1].body.append(line)
    return [s for s in sections if s.heading is not None or any(x.strip() for x in s.body)]


def _key(title: str) -> str:
    return " ".join(title.lower().split())


def _sans_tickets(line: str) -> str:
    """A line reduced for comparison: ticket numbers and the punctuation around them gone."""
    stripped = re.sub(r"[-–,;:()\[\]]", " ", _TICKET.sub(" ", line))
    return " ".join(stripped.lower().split())


def _hunks(before: list[str], after: list[str]) -> list[list[str]]:
    hunks: list[list[str]] = []
    for line in difflib.unified_diff(before, after, "draft", "approved", n=1, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
    return hunks


def _touching(hunks: Sequence[list[str]], evidence: set[str]) -> list[str]:
    return [
        "\n".join(hunk)
        for hunk in hunks
        if any(line[:1] in "+-" and line[1:] in evidence for line in hunk[1:])
    ]


def _longest_increasing(values: Sequence[int]) -> set[int]:
    """Positions of one longest strictly increasing subsequence (the sections that stayed)."""
    best: list[int] = [1] * len(values)
    back: list[int] = [-1] * len(values)
    for i in range(len(values)):
        for j in range(i):
            if values[j] < values[i] and best[j] + 1 > best[i]:
                best[i], back[i] = best[j] + 1, j
    if not values:
        return set()
    position = max(range(len(values)), key=lambda i: (best[i], -i))
    kept: set[int] = set()
    while position != -1:
        kept.add(position)
        position = back[position]
    return kept


def _is_descriptive(word: str) -> bool:
    return word.lower() in _COMMON_ADJECTIVES or bool(_DESCRIPTIVE.search(word))


def _named(title: str) -> str:
    """A section as a rule names it: its title's words in lower case, at most six.

    Only letters and digits survive, so no markup and no control character of
    the document reaches a lesson.
    """
    words = re.findall(r"[^\W_]+", title.lower())
    return " ".join(words[:6]) or "untitled"


def _removal_rule(section: str | None, lines: Sequence[str]) -> str:
    """The pattern a set of removed lines shares, as a rule; never one of the lines."""
    kinds = {_kind(line) or "" for line in lines}
    if len(kinds) == 1 and (kind := kinds.pop()):
        where = f" from the {section} section" if section else ""
        return f"Leave out {kind} items{where}."
    if section:
        return f"Keep the {section} section to what matters: leave out minor items."
    return "Keep the text to what matters: leave out minor lines."


def _first_word(text: str) -> str:
    return next(iter(re.findall(r"[A-Za-z]+", text[:40])), "").lower()


def _rewording_rules(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The wording patterns every rewritten line shares: a rule holds where no line contradicts it.

    Each pair is a line as drafted and as the user rewrote it; the rules name
    a pattern (a prefix dropped, a past-tense verb, a capital, a full stop),
    never the words.
    """
    votes: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
        rule: ([], []) for rule in (RULE_NO_PREFIX, RULE_PAST_TENSE, RULE_CAPITAL, RULE_FULL_STOP)
    }
    for pair in pairs:
        old = _subject(_BULLET.sub("", pair[0].strip()))
        new = _subject(_BULLET.sub("", pair[1].strip()))
        if _KIND_OF_ITEM.match(old):
            votes[RULE_NO_PREFIX][0 if not _KIND_OF_ITEM.match(new) else 1].append(pair)
            old = _KIND_OF_ITEM.sub("", old, count=1)
        if not old or not new:
            continue
        if old[:1].islower():
            votes[RULE_CAPITAL][0 if new[:1].isupper() else 1].append(pair)
        if not old.endswith((".", "!", "?")):
            votes[RULE_FULL_STOP][0 if new.endswith(".") else 1].append(pair)
        was, now = _first_word(old), _first_word(new)
        if was in _VERB_GROUPS or was in _IRREGULAR_PAST or _past(was) == now:
            if now == _past(was) and now != was:
                votes[RULE_PAST_TENSE][0].append(pair)
            elif now == was:
                votes[RULE_PAST_TENSE][1].append(pair)
    return [(rule, yes) for rule, (yes, no) in votes.items() if yes and not no]


def derive_lessons(draft_as_placed: str, approved_text: str) -> LessonsOutcome:
    """Lessons the user's edits teach, each with the hunks of the diff it comes from.

    Recognised edits: a section moved ("X goes above Y"), descriptive words
    dropped from a heading, a heading renamed, a section removed, ticket numbers
    removed, lines reworded in a shared pattern, and other lines removed. Each
    lesson names the pattern and the sections by name; it never quotes a line
    of the document.
    """
    before, after = draft_as_placed.splitlines(), approved_text.splitlines()
    hunks = _hunks(before, after)
    placed, approved = _sections(draft_as_placed), _sections(approved_text)
    lessons: list[Lesson] = []

    def add(text: str, evidence: set[str]) -> None:
        lessons.append(Lesson(lesson=_clip(text, LESSON_MAX), hunks=_touching(hunks, evidence)))

    free = {i: _key(s.title) for i, s in enumerate(approved) if s.heading is not None}
    pairs: list[tuple[int, int]] = []
    if placed and approved and placed[0].heading is None and approved[0].heading is None:
        pairs.append((0, 0))
    unmatched: list[int] = []
    for index, section in enumerate(placed):
        if section.heading is None:
            continue
        match = next((a for a, key in free.items() if key == _key(section.title)), None)
        if match is None:
            unmatched.append(index)
        else:
            del free[match]
            pairs.append((index, match))
    renamed = list(zip(unmatched, free, strict=False))
    pairs.extend(renamed)

    by_approved = sorted(pairs, key=lambda pair: pair[1])
    stayed = _longest_increasing([d for d, _ in by_approved])
    for position, (d, _a) in enumerate(by_approved):
        if position in stayed or placed[d].heading is None:
            continue
        moved = placed[d]
        later = [placed[x] for x, _ in by_approved[position + 1 :] if placed[x].heading]
        earlier = [placed[x] for x, _ in by_approved[:position] if placed[x].heading]
        if later:
            other, relation = later[0], "above"
        elif earlier:
            other, relation = earlier[-1], "below"
        else:
            continue
        evidence = {moved.heading or "", other.heading or "", *(x for x in moved.body if x.strip())}
        add(
            f"Put the {_named(moved.title)} section {relation} the {_named(other.title)} section.",
            evidence,
        )

    plain_headings: list[tuple[_Section, _Section]] = []
    for d, a in renamed:
        old, new = placed[d], approved[a]
        old_words = {w.lower() for w in re.findall(r"[\w'-]+", old.title)}
        new_words = {w.lower() for w in re.findall(r"[\w'-]+", new.title)}
        dropped = [w for w in re.findall(r"[\w'-]+", old.title) if w.lower() not in new_words]
        if new_words < old_words and all(_is_descriptive(w) for w in dropped):
            plain_headings.append((old, new))
        else:
            add(
                f"Name the {_named(old.title)} section {_named(new.title)} instead.",
                {old.heading or ""},
            )
    if plain_headings:
        add(
            "No adjectives or adverbs in headings.",
            {o.heading or "" for o, _ in plain_headings},
        )
    for index in unmatched[len(renamed) :]:
        gone = placed[index]
        add(f"Leave out the {_named(gone.title)} section.", {gone.heading or ""})

    with_tickets: list[str] = []
    reworded: list[tuple[str, str]] = []
    removed: dict[str | None, list[str]] = {}
    for d, a in pairs:
        old_body, new_body = placed[d].body, approved[a].body
        matcher = difflib.SequenceMatcher(None, old_body, new_body, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag not in ("delete", "replace"):
                continue
            replacements = new_body[j1:j2] if tag == "replace" else []
            for offset, line in enumerate(old_body[i1:i2]):
                if not line.strip():
                    continue
                counterpart = replacements[offset] if offset < len(replacements) else None
                if _TICKET.search(line) and (
                    counterpart is None or _sans_tickets(line) == _sans_tickets(counterpart)
                ):
                    with_tickets.append(line)
                elif counterpart is None:
                    section = _named(placed[d].title) if placed[d].heading else None
                    removed.setdefault(section, []).append(line)
                elif counterpart.strip():
                    reworded.append((line, counterpart))
    # The lines above the first heading deleted whole (the draft's summary line) leave no
    # headless section to pair them with; they are removed all the same.
    preamble_gone = (
        placed and placed[0].heading is None and not (approved and approved[0].heading is None)
    )
    if preamble_gone:
        removed.setdefault(None, []).extend(line for line in placed[0].body if line.strip())
    if with_tickets:
        add("Leave out ticket numbers; name the work instead.", set(with_tickets))
    for rule, pairs in _rewording_rules(reworded):
        add(rule, {line for pair in pairs for line in pair})
    for section, lines in list(removed.items())[:3]:
        add(_removal_rule(section, lines), set(lines))

    if lessons:
        report = f"Learned {_plural(len(lessons), 'lesson')} from your edits."
    else:
        report = "Approved without edits worth learning from."
    return LessonsOutcome(lessons=lessons, report=report)


def lessons_from_reason(reason: str) -> LessonsOutcome:
    """What a rejection teaches: a rule from the user's reason, nothing without one.

    The deleted draft is never looked at. A length request becomes a length
    rule; any other reason becomes one rule carrying the user's own words.
    """
    said = "".join(ch for ch in " ".join(reason.split()) if ch.isprintable())
    if not said:
        return LessonsOutcome(report="Rejected without a reason: nothing to learn.")
    brevity = _brevity([said])
    if brevity.line_cap is not None:
        rule = f"Keep drafts to at most {_plural(brevity.line_cap, 'line')}."
    elif brevity.halve:
        rule = "Keep drafts shorter."
    else:
        rule = f"Avoid what made the user reject a draft: {said.rstrip('.')}."
    return LessonsOutcome(
        lessons=[Lesson(lesson=_clip(rule, LESSON_MAX))],
        report="Learned 1 lesson from why you rejected the draft.",
    )


# --- summaries ---------------------------------------------------------------------------


def _compose_summary(request: _Request) -> SummaryOutcome:
    """Fill the summary's fixed fields, carrying forward what the previous one held."""
    previous = request.previous_summary
    asset = request.summary_attrs.get("asset") or (previous.asset if previous else "asset")
    wants = " ".join(request.wants.split()) or (previous.wants if previous else "")
    sources = sorted({*(previous.sources if previous else []), *request.input_names})
    return SummaryOutcome(
        asset=asset,
        wants=_clip(wants or "Keep the asset true.", 500),
        decisions=list(previous.decisions) if previous else [],
        open_questions=list(previous.open_questions) if previous else [],
        next_deadline=request.summary_attrs.get("next_deadline")
        or (previous.next_deadline if previous else None),
        sources=sources[:20],
        report=_clip(f"Summarised what I know about {asset}.", REPORT_MAX),
    )


def _propose_reading(request: _Request) -> AmendmentOutcome:
    """Propose the contract hz wrote for a discovered source, saying what it is and why."""
    source = request.discovered.get("source", "")
    hint = request.discovered.get("hint", "")
    name = request.discovered.get("input", "")
    reason = (
        f"hz found {source} under the discover hint {hint}; reading it as the input {name} "
        "keeps the document complete."
    )
    return AmendmentOutcome(
        text=request.proposal,
        reason=_clip(reason, REASON_MAX),
        report=_clip(f"Proposed reading {source.rsplit('/', 1)[-1]} (discovered).", REPORT_MAX),
    )


# --- the model ---------------------------------------------------------------------------


def _fallback(kind: str, offered: Sequence[str], request: _Request) -> BaseModel:
    """Something the local model can answer when the kind it would choose was not offered."""
    if "nothing" in offered:
        return NothingOutcome(report=f"This turn called for a {kind}, which was not asked for.")
    if "summary" in offered:
        return _compose_summary(request)
    raise ValueError(f"the local model cannot answer with any of: {', '.join(offered)}")


def plan_reply(
    request: _Request, offered: Sequence[str], instructions: str | None = None
) -> tuple[str, str]:
    """Decide the outcome for this request (the conversation as ``_read`` found it): the output
    tool to call and its JSON arguments.

    ``instructions`` carry the contract (its ``Maintains`` section names the
    outline a draft keeps) and the active lessons (rules the draft applies).
    """
    outcome: BaseModel
    if request.kind == "summary":
        outcome = _compose_summary(request)
    elif request.kind == "approval":
        outcome = derive_lessons(request.draft_as_placed, request.approved_text)
    elif request.kind == "rejection":
        outcome = lessons_from_reason(request.rejection_reason)
    elif request.discovered and request.proposal:
        outcome = _propose_reading(request)
    elif request.kind == "draft":
        outcome = compose_draft(
            request.output,
            request.inputs,
            request.steering,
            maintains=maintains_of(instructions or ""),
            lessons=lessons_of(instructions or ""),
        )
    else:
        outcome = NothingOutcome(report="Nothing to do: this turn brought no inputs.")
    kind = str(getattr(outcome, "type", "nothing"))
    if kind not in offered:
        outcome = _fallback(kind, offered, request)
        kind = str(getattr(outcome, "type", "nothing"))
    return kind, json.dumps(outcome.model_dump(mode="json"), ensure_ascii=False)


MAX_SHOWN_COMMITS = 4
"""How many of the commits it drafts about the local model reads whole (``git_show``)."""


def plan_tool_calls(
    request: _Request, messages: Sequence[ModelMessage], tools: Sequence[ToolDefinition]
) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the local model makes next, before it answers; none once it has read.

    Granted ``git:read`` on a draft, it lists each granted repository's commits
    (``git_log``), then reads the first commits its inputs list (``git_show``, at
    most ``MAX_SHOWN_COMMITS``) in the repository whose log lists them. ``request`` is
    ``messages`` as ``_read`` found them: the caller reads the conversation once for this
    and ``plan_reply``.
    """
    granted = {tool.name: roots_in(tool.description or "") for tool in tools}
    repos = granted.get("git_log") or []
    if request.kind != "draft" or not repos or not granted.get("git_show"):
        return []
    made = [
        part.tool_name
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    shas = [
        match["sha"]
        for item in request.inputs
        if item.source.startswith("git:")
        for line in _items(item.content)
        if (match := _GIT_SHA.match(line))
    ]
    if "git_log" not in made:
        limit = min(max(len(shas), 1), 200)
        return [("git_log", {"repo": repo, "limit": limit}) for repo in repos]
    if "git_show" in made or not shas:
        return []
    logs = [_result_lines(part) for part in _tool_returns(messages) if part.tool_name == "git_log"]
    calls = []
    for sha in shas[:MAX_SHOWN_COMMITS]:
        listed = next((n for n, log in enumerate(logs) if any(c.startswith(sha) for c in log)), 0)
        calls.append(("git_show", {"repo": repos[min(listed, len(repos) - 1)], "rev": sha}))
    return calls


def _result_lines(part: ToolReturnPart) -> list[str]:
    """The lines of a tool's result as the journal returns it (``{"result": ...}``)."""
    content = part.content
    result = content.get("result") if isinstance(content, dict) else None
    return str(result or "").splitlines()


def _tool_returns(messages: Sequence[ModelMessage]) -> Iterable[ToolReturnPart]:
    for message in messages:
        if isinstance(message, ModelRequest):
            yield from (part for part in message.parts if isinstance(part, ToolReturnPart))


def _pieces(arguments: str, *, grow: bool = True) -> list[str]:
    pieces: list[str] = []
    start, size = 0, CHUNK_CHARS
    while start < len(arguments):
        pieces.append(arguments[start : start + size])
        start += size
        if grow and len(pieces) >= EVEN_CHUNKS:
            size = min(size * 2, MAX_CHUNK_CHARS)
    return pieces


def estimate_tokens(text: str) -> int:
    """The local model's token estimate: UTF-8 bytes over four, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def _request_text(messages: Sequence[ModelMessage], instructions: str | None) -> str:
    texts = [instructions or ""]
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                texts.append(part.args_as_json_str())
                continue
            content = getattr(part, "content", None)
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts.extend(item for item in content if isinstance(item, str))
    return "\n".join(texts)


def _instructions(
    messages: Sequence[ModelMessage], parameters: ModelRequestParameters
) -> str | None:
    if parameters.instruction_parts is not None:
        return InstructionPart.join(parameters.instruction_parts)
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and message.instructions is not None:
            return message.instructions
    return None


@dataclass
class _Meter:
    input_tokens: int = 0
    output_text: list[str] = field(default_factory=list)

    def usage(self) -> RequestUsage:
        return RequestUsage(
            input_tokens=self.input_tokens,
            output_tokens=estimate_tokens("".join(self.output_text)),
        )

    async def count(self, chunks: AsyncIterator[DeltaToolCalls]) -> AsyncIterator[DeltaToolCalls]:
        async for chunk in chunks:
            self.output_text.extend(delta.json_args or "" for delta in chunk.values())
            yield chunk


@dataclass
class _MeteredStream(FunctionStreamedResponse):
    """The function model's stream, with usage counted as bytes over four."""

    meter: _Meter = field(default_factory=_Meter)

    @property
    def usage(self) -> RequestUsage:
        return self.meter.usage()


def _calls_made(messages: Sequence[ModelMessage]) -> int:
    """How many tool calls the conversation holds, so each new one gets an id of its own."""
    return sum(
        1
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    )


class LocalModel(FunctionModel):
    """The keyless default model.

    Three knobs for tests and demos: ``delay_ms`` holds each streamed chunk (a
    crash-test window); while ``hold_file`` exists every chunk waits for it to
    go, so a test can keep a turn running until it has seen what it needs; and
    ``record_file`` gets one JSON line per request the model receives (its
    instructions and the user texts of its messages), so a test can compare
    what a transcript shows with what the model was given.
    """

    def __init__(
        self, *, delay_ms: int = 0, hold_file: str | None = None, record_file: str | None = None
    ) -> None:
        super().__init__(self._respond, stream_function=self._stream, model_name=LOCAL_MODEL_NAME)
        self.delay_ms = delay_ms
        self.hold_file = Path(hold_file) if hold_file else None
        self.record_file = Path(record_file) if record_file else None

    def _record(self, messages: Sequence[ModelMessage], instructions: str | None) -> None:
        if self.record_file is None:
            return
        received = {"instructions": instructions, "user_texts": list(_user_texts(messages))}
        with self.record_file.open("a", encoding="utf-8") as out:
            out.write(json.dumps(received, ensure_ascii=False) + "\n")

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[DeltaToolCalls]:
        request = _read(messages)
        calls = plan_tool_calls(request, messages, info.function_tools)
        if calls:
            made = _calls_made(messages)
            yield {
                index: DeltaToolCall(
                    name=name,
                    json_args=json.dumps(args, ensure_ascii=False),
                    tool_call_id=f"hz-local-{made + index}",
                )
                for index, (name, args) in enumerate(calls)
            }
            return
        tool, arguments = plan_reply(
            request, [t.name for t in info.output_tools], info.instructions
        )
        paced = bool(self.delay_ms or self.hold_file)
        for index, piece in enumerate(_pieces(arguments, grow=not paced)):
            if self.delay_ms:
                await asyncio.sleep(self.delay_ms / 1000)
            while self.hold_file is not None and self.hold_file.exists():
                await asyncio.sleep(HOLD_POLL_S)
            first = index == 0
            yield {
                0: DeltaToolCall(
                    name=tool if first else None,
                    json_args=piece,
                    tool_call_id=CALL_ID if first else None,
                )
            }

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self._record(messages, info.instructions)
        made = _calls_made(messages)
        request = _read(messages)
        calls = [
            (name, json.dumps(args, ensure_ascii=False), f"hz-local-{made + n}")
            for n, (name, args) in enumerate(
                plan_tool_calls(request, messages, info.function_tools)
            )
        ]
        if not calls:
            tool, arguments = plan_reply(
                request, [t.name for t in info.output_tools], info.instructions
            )
            calls = [(tool, arguments, CALL_ID)]
        parts = [ToolCallPart(name, arguments, tool_call_id=id_) for name, arguments, id_ in calls]
        usage = RequestUsage(
            input_tokens=estimate_tokens(_request_text(messages, info.instructions)),
            output_tokens=estimate_tokens("".join(arguments for _, arguments, _ in calls)),
        )
        return ModelResponse(parts=parts, usage=usage)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        """The function model's stream, built here only so its usage is metered in bytes."""
        settings, parameters = self.prepare_request(model_settings, model_request_parameters)
        info = AgentInfo(
            function_tools=parameters.declared_function_tools,
            allow_text_output=parameters.allow_text_output,
            output_tools=parameters.output_tools,
            model_settings=settings,
            model_request_parameters=parameters,
            instructions=_instructions(messages, parameters),
        )
        self._record(messages, info.instructions)
        meter = _Meter(input_tokens=estimate_tokens(_request_text(messages, info.instructions)))
        yield _MeteredStream(
            model_request_parameters=parameters,
            _model_name=self.model_name,
            _iter=meter.count(self._stream(messages, info)),
            meter=meter,
        )
