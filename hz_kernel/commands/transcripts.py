"""Reads for looking back: one turn whole (``turn.transcript``) and a heinzel's conversation.

Both are served from the spine and the files beside it, on any head, so a
cockpit attached over the wire (which has no files) shows the same. The
transcript is ``turn.body`` (``hz_kernel.commands.watching``) plus what the
spine knows about the turn's context: the lessons active at its pinned
lessons seq and the summary that stood in for the history before it. A
pruned body leaves those and the turn's own events; ``expired`` says why
the rest is missing. Each body record is checked against its type's shape:
a damaged one is passed on as ``{"type": "damaged", "line": N, "reason"}``,
and a finished turn's body cut short says so (``cut_at_line``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from hz_kernel import api
from hz_kernel.commands.watching import BODY_PAGE_BYTES, WatchCommands
from hz_kernel.engine.context import active_lessons
from hz_kernel.errors import UsageError
from hz_kernel.store.bodies import BODY_LINE_MAX_BYTES, body_path, read_body_lines
from hz_kernel.store.envelope import Event
from hz_kernel.store.inbox import Inbox

#: Inbox kinds that carry the user's words (a wake or an approval carries none).
SPOKEN = ("chat", "answer", "retry", "reject")


class TranscriptCommands(WatchCommands):
    """``turn.transcript`` and ``heinzel.conversation``."""

    async def turn_transcript(
        self, *, ref: str, turn: str | None = None, after_offset: int = 0
    ) -> api.TurnTranscript:
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        events = self._spine_events(heinzel_id)
        started = _started(events, turn)
        if started is None:
            if turn is not None:
                raise UsageError("HZU200", "no turn with that id in this heinzel", turn)
            return api.TurnTranscript(heinzel=heinzel_id, name=str(row["name"]))
        body = await self.turn_body(ref=heinzel_id, turn=started.turn, after_offset=after_offset)
        finished = next(
            (e for e in events if e.turn == started.turn and e.kind == "turn.finished"), None
        )
        written = bool(finished is not None and finished.data.get("body_size"))
        lessons_seq = int(started.data.get("lessons_seq") or 0)
        page = (
            None
            if body.refused
            else read_body_lines(
                self.home.heinzel_dir(heinzel_id), started.turn, after_offset, BODY_PAGE_BYTES
            )
        )
        records, cut_at = body.records, None
        if page is not None:
            lines, offset, more, torn, before = page
            records = [
                checked_record(number, raw)
                if raw is not None
                else _damaged(number, f"longer than {BODY_LINE_MAX_BYTES} bytes, not read")
                for number, raw in lines
                if raw is None or raw.strip()
            ]
            ended = finished is not None or any(
                e.turn == started.turn and e.kind == "turn.skipped" for e in events
            )
            if ended and not more:
                cut_at = _cut_line(lines, before, torn, offset, finished)
            body = body.model_copy(update={"offset": offset, "more": more})
        altered = (
            after_offset == 0
            and cut_at is None
            and page is not None
            and _altered(body_path(self.home.heinzel_dir(heinzel_id), started.turn), finished)
        )
        return api.TurnTranscript(
            **body.model_dump(exclude={"records"}),
            records=records,
            cut_at_line=cut_at,
            altered=altered,
            name=str(row["name"]),
            lessons=[
                api.LessonSummary(lesson_id=lesson_id, lesson=text)
                for lesson_id, text in active_lessons(events, lessons_seq)
            ],
            summary=_summary_before(events, started.seq),
            expired=written and not body.present and not body.refused,
        )

    async def conversation(self, *, ref: str) -> api.Conversation:
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        routes: dict[str, tuple[str, str | None]] = {}
        ended: dict[str, str] = {}
        for event in self._spine_events(heinzel_id):
            data = event.data
            if event.kind == "turn.finished" and event.turn:
                stopped = data.get("reason") == "stopped"
                ended[event.turn] = "stopped" if stopped else str(data.get("disposition"))
            elif event.kind == "turn.steered":
                routes[str(data.get("request_id"))] = ("steered", event.turn)
            elif event.kind == "question.answered" and data.get("request_id"):
                routes[str(data["request_id"])] = ("answered", event.turn)
            elif event.kind == "turn.started":
                for request_id in data.get("request_ids") or []:
                    routes.setdefault(str(request_id), ("queued", event.turn))
        items = []
        requests, refused = Inbox(self.home.heinzel_dir(heinzel_id)).scan()
        for request in requests:
            if request.kind not in SPOKEN or not request.message:
                continue
            route, reached = routes.get(request.request_id, ("waiting", None))
            items.append(
                api.ConversationMessage(
                    request_id=request.request_id,
                    kind=request.kind,
                    mode=request.mode,
                    message=request.message,
                    admitted_at=request.admitted_at,
                    route=route,  # type: ignore[arg-type]
                    turn=reached,
                    turn_ended=ended.get(reached) if reached else None,
                )
            )
        return api.Conversation(
            heinzel=heinzel_id,
            name=str(row["name"]),
            items=items,
            skipped=[exc.one_line() for exc in refused],
        )


def _altered(path: Path, finished: Event | None) -> bool:
    """Whether a finished turn's body differs from the hash its ``turn.finished`` recorded (read
    once, on a transcript's first page; a body shorter than written is ``cut_at_line``'s)."""
    if finished is None or not finished.data.get("body_hash"):
        return False
    size = int(finished.data.get("body_size") or 0)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as body:
            digest.update(body.read(size))
    except OSError:
        return False  # unreadable or gone: said as refused or expired
    return digest.hexdigest() != finished.data["body_hash"]


def _cut_line(
    lines: list[tuple[int, bytes | None]],
    before: int,
    torn: bool,
    size: int,
    finished: Event | None,
) -> int | None:
    """The line a finished turn's body was cut at: a torn last line, or shorter than the spine
    says it was written (``body_size``); None when it is whole. ``before``: the lines ahead
    of this page (a page may hold none: a torn last line longer than a page)."""
    last = lines[-1][0] if lines else before
    if torn:
        return last + 1
    written = int(finished.data.get("body_size") or 0) if finished is not None else 0
    return last + 1 if written > size else None


class _Checked(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)


class _ContextPart(_Checked):
    part: str
    chars: int


class _Context(_Checked):
    instructions: str = ""
    messages: list[str] = []
    parts: list[_ContextPart] = []
    labels: list[str] = []


class _Message(_Checked):
    kind: str | None = None
    parts: list[dict[str, Any]] = []
    usage: dict[str, Any] | None = None
    model_name: str | None = None


class _Messages(_Checked):
    messages: list[_Message]


class _Outcome(_Checked):
    outcome: dict[str, Any]


class _Attempt(_Checked):
    attempt: int
    request: int | None = None


class _Chunk(_Checked):
    text: str


class _HandoffOutput(_Checked):
    call: int
    text: str


class _Handoff(_Checked):
    call: int
    runner: str
    exit_status: int
    duration_ms: int
    cut: int = 0
    tail: str = ""


class _Request(_Checked):
    request_id: str
    message: str


class _Input(_Checked):
    name: str
    source: str = ""
    content: str | None = None


class _Draft(_Checked):
    key: str
    asset: str
    text: str


class _Approval(_Checked):
    key: str
    status: str


#: The shape each body record type must have for a reader to show it.
RECORD_SHAPES: dict[str, type[BaseModel]] = {
    "context": _Context,
    "messages": _Messages,
    "outcome": _Outcome,
    "summary": _Outcome,
    "attempt": _Attempt,
    "chunk": _Chunk,
    "handoff_output": _HandoffOutput,
    "handoff": _Handoff,
    "request": _Request,
    "input": _Input,
    "draft": _Draft,
    "approval": _Approval,
}


def checked_record(line: int, raw: bytes) -> dict[str, Any]:
    """One body line as a record, or ``{"type": "damaged", "line", "reason"}`` when it is not
    JSON, not an object, or not of its type's shape (``damaged`` itself is no record type)."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _damaged(line, "not JSON")
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        return _damaged(line, "not a record with a type")
    kind = record["type"]
    if kind == "damaged":
        return _damaged(line, "a record may not call itself damaged")
    shape = RECORD_SHAPES.get(kind)
    if shape is not None:
        try:
            shape.model_validate(record)
        except ValidationError as exc:
            where = ".".join(str(part) for part in exc.errors()[0]["loc"])
            return _damaged(line, f"a {kind} record whose {where} is not what it should be")
    return record


def _damaged(line: int, reason: str) -> dict[str, Any]:
    return {"type": "damaged", "line": line, "reason": reason}


def _started(events: list[Event], turn: str | None) -> Event | None:
    """The ``turn.started`` of ``turn``, or of the newest turn when ``turn`` is None."""
    starts = [e for e in events if e.kind == "turn.started"]
    if turn is None:
        return starts[-1] if starts else None
    return next((e for e in starts if e.turn == turn), None)


def _summary_before(events: list[Event], seq: int) -> api.TranscriptSummary | None:
    """The last ``summary.written`` before ``seq``: the history the turn's context left out."""
    last = None
    for event in events:
        if event.seq >= seq:
            break
        if event.kind == "summary.written":
            last = event
    if last is None:
        return None
    return api.TranscriptSummary(
        seq=last.seq,
        turn=last.turn,
        written_at=last.ts,
        covers_through_seq=int(last.data.get("covers_through_seq") or last.seq),
    )
