"""A turn's transcript and a heinzel's conversation as lines of text, apart from any widget.

``TranscriptModel`` gathers what ``turn.transcript`` answers (the turn's
spine events, whole; its body records, read on from an offset while the
turn runs) and lays it out as ``Line``s: the cause and keys, the inputs,
the context exactly as the body recorded it (each piece of the
instructions and each message under its own heading, the text itself
untouched), every model request and answer with its attempts, each tool
call with its result as the model got it, the outcome, the effects and the
cost. Each line belongs to a ``block``, so
the text of one piece can be read back whole (``block_text``) and
compared with what the model was sent. ``Search`` finds a query in lines.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from hz_kernel.api import Conversation, TurnTranscript
from hz_kernel.following import (
    handoff_line,
    handoff_tail,
    runner_text,
    tool_call_line,
    tool_result_line,
)
from hz_tui import display

Tone = Literal["title", "heading", "label", "body", "dim", "ok", "bad"]

#: What each message of a context is, as its heading says.
MESSAGE_LABELS = {
    "summary": "Summary (stands in for the history it covers)",
    "history": "History since then",
    "last_approved": "The text you last approved",
    "approval": "Your approval or rejection",
    "request": "Your request",
    "situation": "Why it woke, and what a wait may name",
    "inputs": "Inputs, framed as data",
}
PART_LABELS = {"framing": "Framing", "contract": "Contract", "lessons": "Lessons"}
EXPIRED = (
    "This turn's body expired (pruned after the retention period): the context, the "
    "model's messages and the inputs' content are gone. What follows is what the spine keeps."
)
NO_BODY = "This turn wrote no body: nothing was sent to a model."
ALTERED = (
    "This turn's body was changed after the turn ended: its bytes no longer match the sha256 "
    "the spine recorded, so what follows may not be what the model saw or said."
)
UNREADABLE = "This turn's body is not read: what follows is what the spine keeps."


@dataclass(frozen=True, slots=True)
class Line:
    """One line as shown: no newline inside; ``block`` names the piece it belongs to."""

    text: str
    tone: Tone = "body"
    block: str = ""


@dataclass
class TranscriptModel:
    """One turn, as far as it has been read; ``take`` each answer, then ask for ``lines``."""

    heinzel: str
    turn: str | None = None
    name: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    offset: int = 0
    present: bool = True
    expired: bool = False
    answer: TurnTranscript | None = None
    loaded: bool = False
    _lines: list[Line] | None = None

    def take(self, answer: TurnTranscript) -> bool:
        """Merge one answer (the events whole, the records after ``offset``); True if it moved."""
        self.loaded = True
        if answer.turn is None:
            changed = self.answer is None
            self.answer = answer
            self.name = answer.name
            return changed
        changed = (
            answer.turn != self.turn
            or len(answer.events) != len(self.events)
            or bool(answer.records)
            or answer.present != self.present
            or answer.refused != (self.answer.refused if self.answer else None)
            or self.answer is None
        )
        if answer.turn != self.turn:
            self.records = []
        self.turn = answer.turn
        self.name = answer.name
        self.answer = answer
        self.events = answer.events
        self.records.extend(answer.records)
        self.offset = answer.offset
        self.present = answer.present
        self.expired = answer.expired
        if changed:
            self._lines = None
        return changed

    @property
    def running(self) -> bool:
        """Until the turn ends (finished, skipped or parked), its transcript grows."""
        if self.turn is None:
            return not self.loaded
        moves = ("turn.started", "turn.resumed", "turn.finished", "turn.skipped", "turn.waiting")
        last = next((e["kind"] for e in reversed(self.events) if e["kind"] in moves), None)
        return last in (None, "turn.started", "turn.resumed")

    @property
    def status(self) -> str:
        if self.turn is None:
            return "no turn yet" if self.loaded else "loading…"
        finished = self._last("turn.finished")
        if finished is not None:
            data = finished["data"]
            reason = f" ({data['reason']})" if data.get("reason") else ""
            return f"{data.get('disposition')}{reason}"
        if self._last("turn.waiting") is not None and not self.running:
            return "waiting"
        steps = [e["data"].get("step") for e in self.events if e["kind"] == "step.done"]
        return f"running · after {steps[-1]}" if steps else "running · gather"

    def lines(self) -> list[Line]:
        if self._lines is None:
            self._lines = list(self._build())
        return self._lines

    def block_text(self, block: str) -> str:
        """The text of one block as shown, its lines joined again."""
        return "\n".join(line.text for line in self.lines() if line.block == block)

    # -- layout ----------------------------------------------------------------------------

    def _last(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in reversed(self.events) if e["kind"] == kind), None)

    def _of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]

    def _records(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") == kind]

    def _build(self) -> Iterator[Line]:
        if self.turn is None:
            yield Line("This heinzel has run no turn yet." if self.loaded else "Loading…", "dim")
            return
        yield Line(f"Turn {self.turn} · {self.name} · {self.status}", "title")
        refused = self.answer.refused if self.answer is not None else None
        if refused:
            yield Line(f"{UNREADABLE} {refused}", "bad", "damaged")
        elif self.expired:
            yield Line(EXPIRED, "bad", "expired")
        elif not self.present and not self.running:
            yield Line(NO_BODY, "dim")
        for bad in self._records("damaged"):
            yield Line(f"damaged record at line {bad['line']}: {bad['reason']}", "bad", "damaged")
        if self.answer is not None and self.answer.cut_at_line:
            cut = f"the body was cut at line {self.answer.cut_at_line}: what followed is lost"
            yield Line(cut, "bad", "damaged")
        if self.answer is not None and self.answer.altered:
            yield Line(ALTERED, "bad", "damaged")
        yield from self._cause()
        yield from self._inputs()
        yield from self._context()
        yield from self._model()
        yield from self._tools()
        yield from self._outcome()
        yield from self._effects()
        yield from self._cost()

    def _cause(self) -> Iterator[Line]:
        yield from _heading("Cause and keys")
        started = self._last("turn.started")
        if started is None:
            return
        data = started["data"]
        causes = display.causes(data.get("causes") or [data.get("cause", "?")])
        yield Line(f"started {_when(started['ts'])} · cause: {causes}", "body", "cause")
        for key in data.get("keys") or []:
            yield Line(f"key {key}", "body", "cause")
        yield Line(
            f"contract version {data.get('contract_version')} · "
            f"lessons as of seq {data.get('lessons_seq', 0)}",
            "body",
            "cause",
        )
        if data.get("parent_turn"):
            yield Line(
                f"retry of turn {data['parent_turn']} from {data.get('from_step') or 'the start'}",
                "body",
                "cause",
            )
        for resumed in self._of("turn.resumed"):
            yield Line(
                f"resumed {_when(resumed['ts'])} by {resumed['data'].get('woken_by')}", "dim"
            )
        for request in self._records("request"):
            yield Line(f"your message ({request.get('request_id')}):", "label")
            yield from _text(
                str(request.get("message", "")), f"request:{request.get('request_id')}"
            )

    def _inputs(self) -> Iterator[Line]:
        gathered = next(
            (e for e in self._of("step.done") if e["data"].get("step") == "gather"), None
        )
        yield from _heading("Inputs")
        if gathered is None:
            yield Line("not gathered yet" if self.running else "none gathered", "dim")
            return
        sources = {str(r.get("name")): str(r.get("source", "")) for r in self._records("input")}
        items = gathered["data"].get("inputs") or []
        if not items:
            yield Line("this turn read no inputs", "dim")
        for item in items:
            name = str(item.get("name"))
            moved = item.get("moved")
            flag = "moved" if moved else ("unchanged" if moved is False else "")
            source = f" · {sources[name]}" if sources.get(name) else ""
            yield Line(
                f"{name}{source} · fingerprint {str(item.get('fingerprint', ''))[:16]} · "
                f"{item.get('size', 0)} bytes · {flag}".rstrip(" ·"),
                "ok" if moved else "body",
                "inputs",
            )

    def _context(self) -> Iterator[Line]:
        answer = self.answer
        contexts = self._records("context")
        yield from _heading("Context as the model got it")
        summary = answer.summary if answer is not None else None
        if summary is not None:
            by = f" by turn {summary.turn}" if summary.turn else ""
            yield Line(
                f"A summary (seq {summary.seq}, written {_when(summary.written_at)}{by}) "
                f"replaced the history through seq {summary.covers_through_seq}.",
                "label",
                "summary-note",
            )
        else:
            yield Line("No summary yet: the history went whole.", "dim", "summary-note")
        if not contexts:
            if answer is not None and answer.lessons:
                yield Line("Lessons at the turn's pinned seq (from the spine):", "label")
                for lesson in answer.lessons:
                    yield Line(f"- {lesson.lesson}", "body", "spine-lessons")
            if not self.expired:
                yield Line("not built yet" if self.running else "never built", "dim")
            return
        for n, record in enumerate(contexts):
            if len(contexts) > 1:
                yield Line(f"built for attempt set {n + 1} of {len(contexts)}", "dim")
            yield from _context_record(record, n)

    def _model(self) -> Iterator[Line]:
        yield from _heading("Model requests and answers")
        attempts = self._records("attempt")
        started = self._of("attempt.started")
        model = started[-1]["data"].get("model") if started else None
        if model:
            yield Line(f"model {model}", "dim")
        contexts = self._records("context")
        context_messages = [str(m) for r in contexts for m in r.get("messages", [])]
        conversations = self._records("messages")
        if conversations:
            for exchange in conversations:
                yield from _exchange(exchange.get("messages") or [], attempts, context_messages)
        elif attempts or started:
            shown = attempts or [{"attempt": e["data"].get("attempt")} for e in started]
            # An attempt asked again after a restart has one record per ask: one line says so.
            numbers = [(attempt.get("request"), attempt.get("attempt")) for attempt in shown]
            for request, number in dict.fromkeys(numbers):
                again = numbers.count((request, number)) - 1
                more = f" (asked again {again}× after a restart)" if again else ""
                what = f"request {request}" if request is not None else f"attempt {number}"
                yield Line(f"→ {what} asked{more}", "label", "attempts")
        # What went wrong comes after what was asked (a failure listed first read as if it
        # came before the request).
        for kind, template in ATTEMPT_LINES.items():
            for event in self._of(kind):
                yield Line(template.format_map(_Fields(event["data"])).rstrip(), "bad", "attempts")
        streamed = "".join(str(r.get("text", "")) for r in self._records("chunk"))
        if streamed and not conversations:
            yield Line("streamed so far:" if self.running else "streamed output:", "label")
            yield from _text(streamed, "stream")
        if not (attempts or started or conversations):
            yield Line("no model request yet" if self.running else "no model request", "dim")

    def _tools(self) -> Iterator[Line]:
        """Each tool call as the journal kept it: what was asked, how it ended, what the model
        got back. A turn that called no tool shows no such section."""
        # A replay-safe call run again after a restart has two call records: one line says so.
        calls = list({int(r.get("call", -1)): r for r in self._records("tool_call")}.values())
        results = {int(r.get("call", -1)): r for r in self._records("tool_result")}
        events = [e for e in self.events if e["kind"].startswith("tool.")]
        if not (calls or events):
            return
        yield from _heading("Tool calls")
        for event in events:
            if event["kind"] == "tool.started" and event["data"].get("rerun"):
                call = int(event["data"].get("call") or 0) + 1
                yield Line(f"call {call} ran again after a restart (replay-safe)", "dim", "tools")
        for record in calls:
            number = int(record.get("call", -1))
            # Counted from 1 as the requests are (the journal counts from 0).
            yield Line(f"call {number + 1} · {tool_call_line(record)}", "label", f"tool{number}")
            yield from self._runner(number)
            result = results.pop(number, None)
            if result is None:
                yield Line("running…" if self.running else "no result", "dim", f"tool{number}")
            elif result.get("error"):
                yield Line(tool_result_line(result), "bad", f"tool{number}")
            else:
                yield Line(tool_result_line(result), "ok", f"tool{number}")
                yield from _text(
                    str(result.get("shown", result.get("result", ""))), f"tool{number}.result"
                )
        for number, result in results.items():
            # Settled on resume without running (an unsafe call a crash cut short).
            yield Line(f"call {number + 1} · {result.get('tool')}", "label", f"tool{number}")
            yield Line(tool_result_line(result), "bad", f"tool{number}")

    def _runner(self, number: int) -> Iterator[Line]:
        """What the coding agent a call handed a task to wrote, and how it ended."""
        output = "".join(
            str(r.get("text", ""))
            for r in self._records("handoff_output")
            if r.get("call") == number
        )
        ended = next((r for r in self._records("handoff") if r.get("call") == number), None)
        if not (output or ended):
            return
        if ended is not None:
            output += handoff_tail(ended)
        yield Line("runner output:", "label", f"tool{number}")
        yield from _text(runner_text(output.rstrip("\n")), f"tool{number}.runner")
        if ended is not None:
            tone: Tone = "ok" if ended.get("exit_status") == 0 else "bad"
            yield Line(handoff_line(ended), tone, f"tool{number}")

    def _outcome(self) -> Iterator[Line]:
        yield from _heading("Outcome")
        outcomes = self._records("outcome")
        done = next((e for e in self._of("step.done") if e["data"].get("step") == "outcome"), None)
        if done is not None:
            d = done["data"]
            yield Line(f"{d.get('outcome')}: {d.get('report') or ''}".rstrip(": "), "ok", "outcome")
        for record in outcomes:
            outcome = dict(record.get("outcome") or {})
            for name, value in outcome.items():
                if name in ("type", "report"):
                    continue
                yield Line(f"{name}:", "label")
                rendered = value if isinstance(value, str) else json.dumps(value, indent=2)
                yield from _text(rendered, f"outcome.{name}")
        if done is None and not outcomes:
            finished = self._last("turn.finished")
            ended = finished["data"].get("disposition") if finished else None
            if self.running:
                yield Line("none yet", "dim")
            elif ended in ("failed", "abandoned"):
                yield Line(f"none: the turn {ended} before the model gave one", "dim")
            else:
                yield Line("none", "dim")

    def _effects(self) -> Iterator[Line]:
        yield from _heading("Effects")
        shown = False
        for event in self.events:
            line = _effect_line(event)
            if line is not None:
                shown = True
                yield Line(line, "bad" if "failed" in line or "interrupted" in line else "body")
        for record in self._records("summary"):
            shown = True
            covered = next(
                (e["data"].get("covers_through_seq") for e in self._of("summary.written")), None
            )
            yield Line(
                f"summary written: later turns see it instead of the history through seq {covered}",
                "label",
                "summary-written",
            )
            outcome = record.get("outcome") or {}
            yield Line(f"wants: {outcome.get('wants', '')}", "body", "summary-written")
        if not shown:
            yield Line("none", "dim")

    def _cost(self) -> Iterator[Line]:
        yield from _heading("Cost and tokens")
        think = next((e for e in self._of("step.done") if e["data"].get("step") == "think"), None)
        if think is not None:
            d = think["data"]
            attempts = int(d.get("attempts") or 0)
            yield Line(
                f"think: {d.get('tokens') or 0} tokens ({d.get('tokens_cached') or 0} cached), "
                f"{_usd(d)} in {attempts} model call{'' if attempts == 1 else 's'}",
                "body",
                "cost",
            )
        for usage in self._of("usage"):
            d = usage["data"]
            yield Line(f"{d.get('purpose')}: {d.get('tokens') or 0} tokens, {_usd(d)}", "body")
        finished = self._last("turn.finished")
        if finished is not None:
            d = finished["data"]
            yield Line(
                f"turn: {d.get('tokens') or 0} tokens ({d.get('tokens_cached') or 0} cached), "
                f"{_usd(d)}, ran {d.get('duration_ms', 0) / 1000:.1f} s",
                "body",
                "cost",
            )
            if d.get("body_hash"):
                yield Line(f"body {d.get('body_size')} bytes, sha256 {d['body_hash'][:16]}…", "dim")
        elif think is None:
            yield Line("nothing spent yet" if self.running else "nothing spent", "dim")


def _heading(title: str) -> Iterator[Line]:
    yield Line("")
    yield Line(title, "heading")


def _text(text: str, block: str, tone: Tone = "body") -> Iterator[Line]:
    for line in text.split("\n"):
        yield Line(line, tone, block)


def _when(ts: str) -> str:
    return display.clock(ts)


def _usd(data: dict[str, Any]) -> str:
    if data.get("priced") is False:
        return "cost unknown"
    return display.usd(float(data.get("usd") or 0.0))


def _context_record(record: dict[str, Any], n: int) -> Iterator[Line]:
    """The instructions, split into their parts where the body says where each begins."""
    instructions = str(record.get("instructions", ""))
    parts = record.get("parts") or []
    yield Line("Instructions", "label")
    if sum(int(p.get("chars", 0)) for p in parts) + 2 * max(len(parts) - 1, 0) == len(instructions):
        start = 0
        for part in parts:
            chars = int(part.get("chars", 0))
            name = str(part.get("part"))
            yield Line(f"· {PART_LABELS.get(name, name)}", "dim")
            yield from _text(instructions[start : start + chars], f"context{n}.{name}")
            start += chars + 2
    else:
        yield from _text(instructions, f"context{n}.instructions")
    labels = list(record.get("labels") or [])
    for index, message in enumerate(record.get("messages") or []):
        label = labels[index] if index < len(labels) else "message"
        yield Line(f"Message {index + 1} · {MESSAGE_LABELS.get(label, label)}", "label")
        yield from _text(str(message), f"context{n}.message{index + 1}")


def _exchange(
    messages: list[dict[str, Any]], attempts: list[dict[str, Any]], context: list[str]
) -> Iterator[Line]:
    """Each request and the answer to it; a request's attempts are the body's records of it."""
    request = 0
    for n, message in enumerate(messages):
        parts = message.get("parts") or []
        if message.get("kind") == "request":
            if n == len(messages) - 1 and n > 0:
                # pydantic-ai closes a run with the output tool's receipt; no model sees it.
                yield Line("· closing receipt (recorded, not sent to the model)", "dim")
                for part in parts:
                    yield from _request_part(part, context, "receipt")
                continue
            request += 1
            tries = [str(a.get("attempt")) for a in attempts if a.get("request") == request]
            # One try is the rule (a tool round is a new request, not a retry): only retries
            # and requests the body has no record of say more.
            label = f" (attempts {', '.join(tries)})" if len(tries) > 1 else ""
            label = label if tries else " (attempt not recorded)"
            yield Line(f"→ request {request}{label}", "label", f"request{request}")
            for part in parts:
                yield from _request_part(part, context, f"request{request}")
        else:
            usage = message.get("usage") or {}
            yield Line(
                f"← answer to request {request} · {message.get('model_name') or 'model'} · "
                f"{usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out",
                "label",
                f"answer{request}",
            )
            for part in parts:
                yield from _answer_part(part, f"answer{request}")


def _request_part(part: dict[str, Any], context: list[str], block: str) -> Iterator[Line]:
    kind = part.get("part_kind")
    content = part.get("content")
    if kind == "user-prompt":
        text = content if isinstance(content, str) else "\n".join(map(str, content or []))
        if text in context:
            yield Line(f"  context message {context.index(text) + 1} (shown above)", "dim", block)
        else:
            yield from _text(text, block)
    elif kind == "tool-return":
        yield Line(f"  tool result {part.get('tool_name')}:", "dim", block)
        yield from _text(_tool_result(content), block)
    elif kind == "retry-prompt":
        yield Line(f"  asked to try again ({part.get('tool_name') or 'output'}):", "bad", block)
        yield from _text(_plain(content), block)
    else:
        yield from _text(_plain(content), block, "dim")


def _answer_part(part: dict[str, Any], block: str) -> Iterator[Line]:
    kind = part.get("part_kind")
    if kind == "tool-call":
        yield Line(f"  tool call {part.get('tool_name')}:", "dim", block)
        args = part.get("args")
        try:
            data = json.loads(args) if isinstance(args, str) else args
            rendered = json.dumps(data, indent=2, ensure_ascii=False)
        except ValueError:
            rendered = str(args)
        yield from _text(rendered, block)
    elif kind in ("text", "thinking"):
        yield from _text(str(part.get("content", "")), block, "body" if kind == "text" else "dim")


def _tool_result(content: object) -> str:
    """A tool's result as the model got it: its text as text (a JSON envelope's ``result``
    string, lines and all), what else the envelope says (cut short, an error) after it."""
    data = content
    if isinstance(content, str):
        try:
            data = json.loads(content)
        except ValueError:
            return content
    if not isinstance(data, dict) or not isinstance(data.get("result"), str):
        return _plain(content)
    rest = {key: value for key, value in data.items() if key != "result"}
    notes = ", ".join(f"{key}: {value}" for key, value in rest.items())
    return data["result"] + (f"\n({notes})" if notes else "")


def _plain(content: object) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, indent=2, ensure_ascii=False, default=str)


#: A retried or failed model attempt's line, filled from the event's data.
ATTEMPT_LINES = {
    "attempt.retry": "attempt {attempt} failed ({error}); tried again after {delay_ms} ms",
    "attempt.failed": "attempt {attempt} failed ({code}): {error}",
}
#: The effect ledger's line for each kind of spine event it shows, filled from the event's data.
EFFECT_LINES = {
    "effect.started": "{effect} started · key {key}",
    "effect.done": "done{found} · key {key}",
    "effect.failed": "failed · key {key}: {error}",
    "effect.interrupted": "interrupted, never performed · key {key}",
    "handoff.finished": "{runner} ended (status {exit_status}) after {duration_ms} ms;"
    " transcript {transcript_size} bytes",
    "draft.placed": "draft placed in {asset} ({size} bytes)",
    "draft.superseded": "draft {key} superseded",
    "lesson.recorded": "lesson learned: {lesson}",
    "question.asked": "asked: {question}",
    "amendment.proposed": "a contract amendment proposed",
    "approval.observed": "approval seen: {share_changed:.0%} of the words changed",
    "turn.waiting": "waits until {until}",
}


class _Fields(dict[str, Any]):
    """An event's data for ``str.format_map``: a field it lacks reads ``None``."""

    def __missing__(self, key: str) -> None:
        return None


def _effect_line(event: dict[str, Any]) -> str | None:
    template = EFFECT_LINES.get(event["kind"])
    if template is None:
        return None
    d = event["data"]
    fields = _Fields(
        d,
        found=" (found on resume)" if d.get("found_on_resume") else "",
        share_changed=d.get("share_changed", 0),
        until=d.get("until") or "something happens",
    )
    return template.format_map(fields)


# -- the conversation -------------------------------------------------------------------------

ROUTES = {
    "steered": "steered into turn",
    "queued": "queued → turn",
    "answered": "answered in turn",
    "waiting": "waiting to be delivered",
}


def conversation_lines(conversation: Conversation) -> list[Line]:
    """Every message sent, oldest first, each under a line saying how it was sent and where to."""
    skipped = [Line(f"skipped: {why}", "bad", "skipped") for why in conversation.skipped]
    if not conversation.items:
        return [*skipped, Line("You have sent this heinzel no message yet.", "dim")]
    lines: list[Line] = [*skipped]
    for item in conversation.items:
        when = display.clock(item.admitted_at.isoformat())
        kind = "" if item.kind == "chat" else f" · {item.kind}"
        route = ROUTES[item.route] + (f" {item.turn}" if item.turn else "")
        tone: Tone = "ok" if item.route in ("steered", "answered") else "label"
        if item.turn_ended == "stopped":
            route, tone = f"{route}, which you stopped", "bad"
        elif item.turn_ended in ("failed", "abandoned"):
            route, tone = f"{route}, which {item.turn_ended}", "bad"
        lines.append(Line(f"{when} · {item.mode.upper()}{kind} · {route}", tone, item.request_id))
        lines.extend(_text(item.message, item.request_id))
        lines.append(Line(""))
    return lines


# -- search -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Match:
    """From ``start`` in line ``line`` to ``end`` in line ``end_line`` (mostly the same line)."""

    line: int
    start: int
    end: int
    end_line: int

    def spans(self, lines: list[Line]) -> Iterator[tuple[int, int, int]]:
        """Each line the match covers, with the part of its text: ``(line, start, end)``."""
        for number in range(self.line, self.end_line + 1):
            start = self.start if number == self.line else 0
            end = self.end if number == self.end_line else len(lines[number].text)
            yield number, start, end


def find(lines: list[Line], query: str) -> list[Match]:
    """Every place ``query`` occurs (ignoring case), in reading order.

    A space in the query stands for any run of white space, a line break
    among it: a phrase the source text broke over two lines is still found.
    """
    words = query.split()
    if not words:
        return []
    edges = r"\s+" if query[0].isspace() else "", r"\s+" if query[-1].isspace() else ""
    pattern = re.compile(edges[0] + r"\s+".join(map(re.escape, words)) + edges[1], re.IGNORECASE)
    text = "\n".join(line.text for line in lines)
    starts = list(itertools.accumulate((len(line.text) + 1 for line in lines), initial=0))
    found = []
    for hit in pattern.finditer(text):
        first = bisect.bisect_right(starts, hit.start()) - 1
        last = bisect.bisect_right(starts, hit.end() - 1) - 1
        found.append(Match(first, hit.start() - starts[first], hit.end() - starts[last], last))
    return found
