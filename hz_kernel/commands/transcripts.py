"""Reads for looking back: one turn whole (``turn.transcript``) and a heinzel's conversation.

Both are served from the spine and the files beside it, on any head, so a
cockpit attached over the wire (which has no files) shows the same. The
transcript is ``turn.body`` (``hz_kernel.commands.watching``) plus what the
spine knows about the turn's context: the lessons active at its pinned
lessons seq and the summary that stood in for the history before it. A
pruned body leaves those and the turn's own events; ``expired`` says why
the rest is missing.
"""

from __future__ import annotations

from hz_kernel import api
from hz_kernel.commands.watching import WatchCommands
from hz_kernel.engine.context import active_lessons
from hz_kernel.errors import UsageError
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
        return api.TurnTranscript(
            **body.model_dump(),
            name=str(row["name"]),
            lessons=[
                api.LessonSummary(lesson_id=lesson_id, lesson=text)
                for lesson_id, text in active_lessons(events, lessons_seq)
            ],
            summary=_summary_before(events, started.seq),
            expired=written and not body.present,
        )

    async def conversation(self, *, ref: str) -> api.Conversation:
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        routes: dict[str, tuple[str, str | None]] = {}
        for event in self._spine_events(heinzel_id):
            data = event.data
            if event.kind == "turn.steered":
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
                )
            )
        return api.Conversation(
            heinzel=heinzel_id,
            name=str(row["name"]),
            items=items,
            skipped=[exc.one_line() for exc in refused],
        )


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
