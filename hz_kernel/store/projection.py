"""From spine events to index rows: the one place that knows what an event means for a listing.

A ``Projection`` folds one heinzel's events into rows (the heinzel, its
turns, drafts, lessons, amendments, questions, keys, delivered requests,
costs, notices). It is pure: the same events give the same rows, which is
what lets the index be deleted and rebuilt at any time. Rows touched since
the last flush are remembered in ``dirty`` so the writer can upsert just
those.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hz_kernel.store.envelope import Event
from hz_kernel.vocabulary import MIGRATIONS, migrate

ContractLoader = Callable[[int | str], dict[str, Any] | None]

Row = dict[str, Any]


def _day(ts: str) -> str:
    return ts[:10]


class Projection:
    """The rows one heinzel's spine yields."""

    def __init__(self, heinzel_id: str, load_contract: ContractLoader | None = None) -> None:
        self.id = heinzel_id
        self._load_contract = load_contract
        self.heinzel: Row = {
            "id": heinzel_id,
            "name": heinzel_id,
            "namespace": "me",
            "state": "proposed",
            "contract_name": None,
            "contract_version": None,
            "contract_fingerprint": None,
            "proposed_version": None,
            "assets": [],
            "schedule": None,
            "render_on_schedule": "always",
            "inputs": {},
            "hz": {},
            "aliases": None,
            "created_at": None,
            "paused": 0,
            "retired": 0,
            "damaged": 0,
            "awake_turn": None,
            "waiting_turn": None,
            "waiting_until": None,
            "waiting_on": None,
            "last_turn": None,
            "last_cause": None,
            "last_disposition": None,
            "last_report": None,
            "last_turn_at": None,
            "pending_draft": None,
            "pending_amendment": None,
            "pending_question": None,
            "lessons_active": 0,
            "lessons_seq": 0,
            "turns_count": 0,
            "next_due": None,
            "last_slot": None,
            "approved_at": None,
            "rendered_version": None,
            "expiring": 0,
            "hinted": 0,
            "last_summary_seq": None,
            "events_since_summary": 0,
            "seq": 0,
            "last_hash": None,
        }
        self.turns: dict[str, Row] = {}
        self.drafts: dict[str, Row] = {}
        self.lessons: dict[str, Row] = {}
        self.amendments: dict[str, Row] = {}
        self.questions: dict[str, Row] = {}
        self.keys: dict[str, Row] = {}
        self.requests: dict[str, Row] = {}
        self.costs: dict[tuple[str, str], Row] = {}
        self.notices: dict[str, Row] = {}
        self.discovered: dict[str, str] = {}
        """Sources the discovery job found for this heinzel, with the hint that found each (not
        in the index: only the job and an amendment read them, from the open spine)."""
        self.declined: set[str] = set()
        """Sources (input names, discovered paths) the user declined in an amendment."""
        self.dirty: set[tuple[str, Any]] = set()
        self.hidden: dict[str, str | None] = {}
        """The spine's context edits: each hidden turn or lesson with its replacement text."""
        self.approvals: dict[str, str | None] = {}
        """Each approved draft's key with the turn that observed its approval (the last one)."""
        self._live: dict[str, dict[Any, None]] = {}
        self._row_key = ("heinzel", heinzel_id)
        self._slot_prefix = f"{heinzel_id}@"

    # -- folding -----------------------------------------------------------------------

    def apply_all(self, events: list[Event]) -> Projection:
        """Fold many events; the heinzel's state is derived once, after the last."""
        for event in events:
            self._fold(event)
        if events:
            self._settle()
        return self

    def apply(self, event: Event) -> None:
        self._fold(event)
        self._settle()

    def _fold(self, event: Event) -> None:
        kind, data = event.kind, event.data
        if kind in MIGRATIONS:
            kind, data = migrate(kind, data)
        row = self.heinzel
        row["seq"], row["last_hash"] = event.seq, event.hash
        if kind != "summary.written":
            row["events_since_summary"] += 1
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event, data)

    def _settle(self) -> None:
        """Derive the state from the row (no handler reads it) and mark the row dirty."""
        self.heinzel["state"] = self._state()
        self.dirty.add(self._row_key)

    def mark_damaged(self, damaged: bool) -> None:
        self.heinzel["damaged"] = int(damaged)
        self.dirty.add(("heinzel", self.id))

    def _state(self) -> str:
        row = self.heinzel
        if row["retired"]:
            return "retired"
        if row["contract_version"] is None:
            return "proposed"
        if row["paused"]:
            return "paused"
        if row["awake_turn"]:
            return "awake"
        if (
            row["waiting_turn"]
            or row["pending_draft"]
            or row["pending_question"]
            or row["pending_amendment"]
        ):
            return "waiting"
        return "asleep"

    # -- helpers for handlers ----------------------------------------------------------

    def live(self, table: str, store: dict[Any, Row]) -> list[Row]:
        """The rows of ``store`` whose status is open (``OPEN[table]``), in the store's order.

        A turn asks for the few open rows of a history of thousands: every row
        an event changes is touched (``_touch``, ``_turn``), so the candidates
        are the rows touched since they were last found closed, not all rows.
        """
        candidates = self._live.setdefault(table, {})
        open_statuses = OPEN[table]
        rows = []
        for pk in list(candidates):
            row = store.get(pk)
            if row is not None and row.get("status") in open_statuses:
                rows.append(row)
            else:
                del candidates[pk]
        return rows

    def _touch(self, table: str, store: dict[Any, Row], pk: Any, /, **defaults: Any) -> Row:
        row = store.get(pk)
        if row is None:
            row = store[pk] = {"heinzel": self.id, **defaults}
        self.dirty.add((table, pk))
        if table in OPEN:
            self._live.setdefault(table, {})[pk] = None
        return row

    def _turn(self, event: Event) -> Row | None:
        turn = event.turn
        if not turn:
            return None
        row = self.turns.get(turn)
        if row is None:
            row = self.turns[turn] = {
                "heinzel": self.id,
                "turn": turn,
                "seq": event.seq,
                "started_at": event.ts,
                **_NEW_TURN,
                "causes": [],
                "keys": [],
                "request_ids": [],
            }
        self.dirty.add(("turns", turn))
        self._live.setdefault("turns", {})[turn] = None
        return row

    def _set_key(self, key: str, turn: str | None, status: str) -> None:
        row = self.keys.get(key)
        if row is None:
            self.keys[key] = {"heinzel": self.id, "key": key, "turn": turn, "status": status}
        else:
            row["turn"], row["status"] = turn, status
        self.dirty.add(("keys", key))

    def _contract(self, version: int | str) -> None:
        """Copy what listings filter on from a compiled version (or a proposal id)."""
        row = self.heinzel
        compiled = self._load_contract(version) if self._load_contract else None
        if not compiled:
            return
        hz = compiled.get("hz") or {}
        row["contract_name"] = compiled.get("name")
        publishes = hz.get("publishes") or []
        row["assets"] = list(dict.fromkeys(p["asset"] for p in publishes if "asset" in p))
        row["schedule"] = hz.get("schedule")
        row["render_on_schedule"] = hz.get("render_on_schedule") or "always"
        previous = row["inputs"]
        inputs = {}
        for name, spec in (hz.get("inputs") or {}).items():
            entry = dict(spec) if isinstance(spec, dict) else {}
            entry["last_fp"] = (previous.get(name) or {}).get("last_fp")
            inputs[name] = entry
        row["inputs"] = inputs
        row["hz"] = hz
        outputs = hz.get("outputs") or {}
        row["expiring"] = int(
            any(isinstance(spec, dict) and spec.get("valid_for") for spec in outputs.values())
        )
        row["hinted"] = int(bool(hz.get("discover")))

    def _repend(self, column: str, table: str, changed: Any) -> None:
        """Keep ``column`` naming the pending row of ``table`` with the highest seq.

        Only the row ``changed`` differs from when the column was last set, so
        most events are decided by that row and the one named now, without
        looking at every row (a long history holds thousands); a change to the
        named row, or a seq not above it (lines out of order), looks at all.
        """
        h = self.heinzel
        current = h[column]
        store: dict[Any, Row] = getattr(self, table)
        row = store.get(changed)
        if row is not None and changed != current:
            if row.get("status") != "pending":
                return
            top = store.get(current)
            if top is None or top.get("seq", 0) < row.get("seq", 0):
                h[column] = changed
                return
        h[column] = self._pending(table, store)

    def _pending(self, table: str, store: dict[Any, Row]) -> str | None:
        pending = self.live(table, store)
        if not pending:
            return None
        return max(pending, key=lambda r: r.get("seq", 0)).get("pk")


#: The statuses of a row still open, per table that has them: ``Projection.live`` finds these.
OPEN: dict[str, frozenset[str]] = {
    "drafts": frozenset({"pending"}),
    "questions": frozenset({"pending"}),
    "amendments": frozenset({"pending"}),
    "turns": frozenset({"running", "waiting"}),
    "requests": frozenset({"requested"}),
}

# -- event handlers ---------------------------------------------------------------------

#: A new turn row's columns past its id, seq and start (its lists are made fresh per row).
_NEW_TURN: Row = {
    "cause": None,
    "causes": None,
    "keys": None,
    "contract_version": None,
    "lessons_seq": 0,
    "status": "running",
    "step": None,
    "attempt": 0,
    "disposition": None,
    "reason": None,
    "holder": None,
    "report": None,
    "usd": 0.0,
    "tokens": 0,
    "tokens_cached": 0,
    "duration_ms": 0,
    "finished_at": None,
    "waiting_until": None,
    "waiting_on": None,
    "parent_turn": None,
    "from_step": None,
    "resumes": 0,
    "body_hash": None,
    "body_size": None,
    "request_ids": None,
}


def _created(p: Projection, e: Event, d: dict[str, Any]) -> None:
    p.heinzel.update(name=d.get("name", p.id), namespace=d.get("namespace", "me"), created_at=e.ts)


def _renamed(p: Projection, e: Event, d: dict[str, Any]) -> None:
    """The new name; the old one stays an alias, so readers that name it keep finding it."""
    row = p.heinzel
    previous, name = d.get("previous") or row["name"], d.get("name", row["name"])
    aliases = [a for a in dict.fromkeys([*(row["aliases"] or ()), previous]) if a != name]
    row["name"], row["aliases"] = name, aliases or None


def _flag(name: str, value: int) -> Callable[[Projection, Event, dict[str, Any]], None]:
    def handler(p: Projection, e: Event, d: dict[str, Any]) -> None:
        p.heinzel[name] = value

    return handler


def _contract_proposed(p: Projection, e: Event, d: dict[str, Any]) -> None:
    p.heinzel["proposed_version"] = d.get("version")
    if p.heinzel["contract_version"] is None and d.get("proposal"):
        p._contract(str(d["proposal"]))


def _contract_approved(p: Projection, e: Event, d: dict[str, Any]) -> None:
    version = d.get("version")
    p.heinzel.update(
        contract_version=version,
        contract_fingerprint=d.get("fingerprint"),
        proposed_version=None,
        approved_at=p.heinzel["approved_at"] or e.ts,
    )
    if isinstance(version, int):
        p._contract(version)


def _amendment_proposed(p: Projection, e: Event, d: dict[str, Any]) -> None:
    pk = d.get("proposal")
    row = p._touch("amendments", p.amendments, pk, pk=pk, proposal=pk)
    row.update(
        seq=e.seq,
        by=d.get("by"),
        fingerprint=d.get("fingerprint"),
        widens=d.get("widens", []),
        reason=d.get("reason"),
        status="pending",
        proposed_at=e.ts,
        version=None,
        turn=e.turn,
    )
    p._repend("pending_amendment", "amendments", pk)


def _amendment_declined(p: Projection, e: Event, d: dict[str, Any]) -> None:
    p.declined.update(str(source) for source in d.get("sources") or [])
    pk = d.get("proposal")
    if pk in p.amendments:
        p._touch("amendments", p.amendments, pk)["status"] = "declined"
    p._repend("pending_amendment", "amendments", pk)


def _source_discovered(p: Projection, e: Event, d: dict[str, Any]) -> None:
    p.discovered[str(d.get("source"))] = str(d.get("hint"))


def _contract_amended(p: Projection, e: Event, d: dict[str, Any]) -> None:
    _contract_approved(p, e, d)
    pk = d.get("proposal")
    if pk and pk in p.amendments:
        row = p._touch("amendments", p.amendments, pk)
        row.update(status="approved", version=d.get("version"))
    p._repend("pending_amendment", "amendments", pk)


def _turn_started(p: Projection, e: Event, d: dict[str, Any]) -> None:
    row = p._turn(e)
    if row is None:
        return
    causes = d.get("causes") or [d.get("cause")]
    keys = d.get("keys") or ([e.key] if e.key else [])
    row.update(
        seq=e.seq,
        started_at=e.ts,
        cause=d.get("cause"),
        causes=causes,
        keys=keys,
        contract_version=d.get("contract_version"),
        lessons_seq=d.get("lessons_seq", 0),
        status="running",
        parent_turn=d.get("parent_turn"),
        from_step=d.get("from_step"),
        request_ids=d.get("request_ids", []),
    )
    _note_rendered(p, row)
    for key in keys:
        p._set_key(key, e.turn, "started")
    for request_id in d.get("request_ids", []):
        req = p._touch("requests", p.requests, request_id, request_id=request_id)
        req.update(status="consumed", turn=e.turn)
    h = p.heinzel
    # The row now describes the turn under way: the last one's outcome no longer applies.
    h.update(
        awake_turn=e.turn,
        last_turn=e.turn,
        last_cause=d.get("cause"),
        last_turn_at=e.ts,
        last_disposition=None,
        last_report=None,
    )
    h["turns_count"] += 1
    if h["waiting_turn"] == e.turn:
        h["waiting_turn"] = None
    _note_slot(p, keys)


def _step_done(p: Projection, e: Event, d: dict[str, Any]) -> None:
    row = p._turn(e)
    if row is None:
        return
    row["step"] = d.get("step")
    if d.get("report"):
        row["report"] = d["report"]
    if d.get("step") == "gather":
        inputs = p.heinzel["inputs"]
        for item in d.get("inputs", []):
            name = item.get("name") if isinstance(item, dict) else None
            if name in inputs:
                inputs[name] = {**inputs[name], "last_fp": item.get("fingerprint")}


def _attempt(p: Projection, e: Event, d: dict[str, Any]) -> None:
    row = p._turn(e)
    if row is not None:
        row["attempt"] = d.get("attempt", row["attempt"])


def _turn_waiting(p: Projection, e: Event, d: dict[str, Any]) -> None:
    row = p._turn(e)
    if row is None:
        return
    row.update(status="waiting", waiting_until=d.get("until"), waiting_on=d.get("on"))
    h = p.heinzel
    h.update(waiting_turn=e.turn, waiting_until=d.get("until"), waiting_on=d.get("on"))
    if h["awake_turn"] == e.turn:
        h["awake_turn"] = None


def _turn_resumed(p: Projection, e: Event, d: dict[str, Any]) -> None:
    row = p._turn(e)
    if row is None:
        return
    row.update(status="running", waiting_until=None, waiting_on=None)
    if d.get("woken_by") != "restart":
        row["step"] = "gather"  # woken from a wait, it thinks again from its gathered inputs
    row["resumes"] = d.get("resumes", row["resumes"] + 1)
    h = p.heinzel
    h["awake_turn"] = e.turn
    if h["waiting_turn"] == e.turn:
        h.update(waiting_turn=None, waiting_until=None, waiting_on=None)


def _turn_steered(p: Projection, e: Event, d: dict[str, Any]) -> None:
    request_id = d.get("request_id")
    req = p._touch("requests", p.requests, request_id, request_id=request_id)
    req.update(status="steered", turn=e.turn, seq=e.seq)


def _turn_requested(p: Projection, e: Event, d: dict[str, Any]) -> None:
    pk = d.get("request_id") or d.get("key")
    req = p._touch("requests", p.requests, pk, request_id=pk)
    req.update(status="requested", turn=None, seq=e.seq, cause=d.get("cause"), key=d.get("key"))


def _close_turn(p: Projection, e: Event, d: dict[str, Any], status: str) -> Row | None:
    row = p._turn(e)
    h = p.heinzel
    if h["awake_turn"] == e.turn:
        h["awake_turn"] = None
    if h["waiting_turn"] == e.turn:
        h.update(waiting_turn=None, waiting_until=None, waiting_on=None)
    if row is None:
        return None
    row.update(status=status, finished_at=e.ts, waiting_until=None, waiting_on=None)
    return row


def _turn_finished(p: Projection, e: Event, d: dict[str, Any]) -> None:
    row = _close_turn(p, e, d, "finished")
    if row is None:
        return
    row.update(
        disposition=d.get("disposition"),
        reason=d.get("reason"),
        report=d.get("report") or row["report"],
        usd=d.get("usd", 0.0),
        tokens=d.get("tokens", 0),
        tokens_cached=d.get("tokens_cached", 0),
        duration_ms=d.get("duration_ms", 0),
        body_hash=d.get("body_hash"),
        body_size=d.get("body_size"),
    )
    for key in row["keys"]:
        p._set_key(key, e.turn, "finished")
    cause = (row["causes"] or [row["cause"]])[0] or "unknown"
    _add_cost(p, e, cause, float(d.get("usd", 0.0)))
    p.heinzel.update(
        last_disposition=row["disposition"], last_report=row["report"], last_turn_at=e.ts
    )


def _turn_skipped(p: Projection, e: Event, d: dict[str, Any]) -> None:
    row = _close_turn(p, e, d, "skipped")
    keys = d.get("keys", [])
    if row is not None:
        causes = d.get("causes", [])
        row.update(
            cause=causes[0] if causes else None,
            causes=causes,
            keys=keys,
            disposition="skipped",
            reason=d.get("reason"),
            holder=d.get("holder"),
            report=d.get("detail")
            or " ".join(filter(None, ["skipped:", d.get("reason"), d.get("holder")])),
        )
        _note_rendered(p, row)
    for key in keys:
        p._set_key(key, e.turn, "skipped")
    h = p.heinzel
    # ``turns_count`` counts turns that started; a skip is still the last turn, with its cause.
    causes = d.get("causes") or []
    h.update(
        last_turn=e.turn,
        last_cause=causes[0] if causes else None,
        last_disposition="skipped",
        last_turn_at=e.ts,
    )
    h["last_report"] = row["report"] if row else None
    _note_slot(p, keys)


def _note_rendered(p: Projection, turn: Row) -> None:
    """Keep ``rendered_version``, the newest contract version a turn not caused by an
    approval ran under, as a turn's version or cause is set: the idle tick reads whether the
    current contract was rendered from the heinzel's row, not from its turns."""
    version, h = turn["contract_version"], p.heinzel
    if version is None:
        return
    if turn["cause"] != "approval":
        if h["rendered_version"] is None or version > h["rendered_version"]:
            h["rendered_version"] = version
    elif version == h["rendered_version"]:
        # A skip made a rendering turn's cause an approval: the others say what is rendered.
        h["rendered_version"] = max(
            (
                t["contract_version"]
                for t in p.turns.values()
                if t["contract_version"] is not None and t["cause"] != "approval"
            ),
            default=None,
        )


#: A schedule slot's key after ``<id>@``: its UTC minute. A wake's request id (a ULID) also
#: starts with a digit, but is no slot: taken for one, it made the newest slot look owed.
_SLOT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def _note_slot(p: Projection, keys: list[str]) -> None:
    """Remember the newest schedule slot a turn covered (keys ``<id>@<ISO slot>``)."""
    prefix = p._slot_prefix
    newest = p.heinzel["last_slot"]
    for key in keys:
        if key.startswith(prefix):
            slot = key[len(prefix) :]
            if _SLOT.fullmatch(slot) and (not newest or slot > newest):
                newest = slot
    p.heinzel["last_slot"] = newest


def _add_cost(p: Projection, e: Event, cause: str, usd: float) -> None:
    if not usd:
        return
    pk = (_day(e.ts), cause)
    row = p._touch("costs", p.costs, pk, day=pk[0], cause=cause, usd=0.0)
    row["usd"] += usd


def _usage(p: Projection, e: Event, d: dict[str, Any]) -> None:
    _add_cost(p, e, f"usage:{d.get('purpose')}", float(d.get("usd", 0.0)))


def _draft_placed(p: Projection, e: Event, d: dict[str, Any]) -> None:
    key = d.get("key")
    row = p._touch("drafts", p.drafts, key, pk=key, key=key)
    row.update(
        seq=e.seq,
        turn=e.turn,
        asset=d.get("asset"),
        output=d.get("output"),
        contract_version=d.get("contract_version"),
        placed_at=e.ts,
        hash=d.get("hash"),
        size=d.get("size"),
        status="pending",
        approver=None,
        share_changed=None,
        output_fp=None,
    )
    p._repend("pending_draft", "drafts", key)


def _draft_status(status: str) -> Callable[[Projection, Event, dict[str, Any]], None]:
    def handler(p: Projection, e: Event, d: dict[str, Any]) -> None:
        key = d.get("key")
        if key in p.drafts:
            row = p._touch("drafts", p.drafts, key)
            row["status"] = status
            if status == "approved":
                p.approvals[key] = e.turn
                row.update(
                    approver=d.get("approver"),
                    share_changed=d.get("share_changed"),
                    output_fp=d.get("output_fp"),
                    decided_at=e.ts,
                )
            else:
                row["decided_at"] = e.ts
        p._repend("pending_draft", "drafts", key)

    return handler


def _lesson_recorded(p: Projection, e: Event, d: dict[str, Any]) -> None:
    pk = d.get("lesson_id")
    row = p._touch("lessons", p.lessons, pk, lesson_id=pk)
    row.update(
        seq=e.seq, lesson=d.get("lesson"), from_key=d.get("from_key"), recorded_at=e.ts, dismissed=0
    )
    _count_lessons(p, e)


def _lesson_dismissed(p: Projection, e: Event, d: dict[str, Any]) -> None:
    pk = d.get("lesson_id")
    if pk in p.lessons:
        p._touch("lessons", p.lessons, pk)["dismissed"] = 1
    _count_lessons(p, e)


def _count_lessons(p: Projection, e: Event) -> None:
    p.heinzel["lessons_active"] = sum(1 for r in p.lessons.values() if not r["dismissed"])
    p.heinzel["lessons_seq"] = e.seq


def _question_asked(p: Projection, e: Event, d: dict[str, Any]) -> None:
    key = d.get("key")
    row = p._touch("questions", p.questions, key, pk=key, key=key)
    row.update(seq=e.seq, turn=e.turn, question=d.get("question"), asked_at=e.ts, status="pending")
    p._repend("pending_question", "questions", key)


def _question_answered(p: Projection, e: Event, d: dict[str, Any]) -> None:
    key = d.get("key")
    if key in p.questions:
        row = p._touch("questions", p.questions, key)
        row.update(status="answered", answered_at=e.ts)
    request_id = d.get("request_id")
    if request_id:
        req = p._touch("requests", p.requests, request_id, request_id=request_id)
        req.update(status="answered", turn=e.turn, seq=e.seq)
    p._repend("pending_question", "questions", key)


def _notice(p: Projection, e: Event, d: dict[str, Any]) -> None:
    key = d.get("key")
    row = p._touch("notices", p.notices, key, key=key)
    row.update(notice=d.get("notice"), ts=e.ts, seq=e.seq)


def _context_edit(p: Projection, e: Event, d: dict[str, Any]) -> None:
    p.hidden[str(d.get("target"))] = d.get("replacement")


def _summary(p: Projection, e: Event, d: dict[str, Any]) -> None:
    p.heinzel["last_summary_seq"] = e.seq
    p.heinzel["events_since_summary"] = 0


_HANDLERS: dict[str, Callable[[Projection, Event, dict[str, Any]], None]] = {
    "heinzel.created": _created,
    "heinzel.renamed": _renamed,
    "heinzel.paused": _flag("paused", 1),
    "heinzel.unpaused": _flag("paused", 0),
    "heinzel.retired": _flag("retired", 1),
    "heinzel.unretired": _flag("retired", 0),
    "contract.proposed": _contract_proposed,
    "contract.approved": _contract_approved,
    "contract.amended": _contract_amended,
    "amendment.proposed": _amendment_proposed,
    "amendment.declined": _amendment_declined,
    "source.discovered": _source_discovered,
    "turn.started": _turn_started,
    "step.done": _step_done,
    "attempt.started": _attempt,
    "attempt.retry": _attempt,
    "turn.waiting": _turn_waiting,
    "turn.resumed": _turn_resumed,
    "turn.steered": _turn_steered,
    "turn.requested": _turn_requested,
    "turn.finished": _turn_finished,
    "turn.skipped": _turn_skipped,
    "usage": _usage,
    "draft.placed": _draft_placed,
    "context.edit": _context_edit,
    "draft.superseded": _draft_status("superseded"),
    "draft.rejected": _draft_status("rejected"),
    "approval.observed": _draft_status("approved"),
    "lesson.recorded": _lesson_recorded,
    "lesson.dismissed": _lesson_dismissed,
    "question.asked": _question_asked,
    "question.answered": _question_answered,
    "notice.raised": _notice,
    "summary.written": _summary,
}
