"""The planner: order by height then oldest due, the per-tick limit, skips, caps and waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from hz_kernel.adapters.sources import FetchResult, SourceRequest
from hz_kernel.commands.tick import _moves
from hz_kernel.errors import HzError
from hz_kernel.tick.fetching import Staged, Watch
from hz_kernel.tick.schedule import SlotClock
from hz_kernel.tick.wakes import (
    HeinzelRow,
    TickInputs,
    due_slot,
    heights,
    plan_tick,
    source_moves,
    upstreams,
    watched,
)

NOW = datetime(2026, 6, 5, 9, 0, 30, tzinfo=UTC)
DAY_AGO = "2026-06-04T08:00:00.000000Z"
FILES = {"source": "files", "method": "glob", "args": {"pattern": "*.md", "root": "/notes"}}


def _row(name: str, *, inputs: dict[str, Any] | None = None, **fields: Any) -> HeinzelRow:
    base: dict[str, Any] = {
        "id": f"hz-{name}",
        "name": name,
        "active": True,
        "schedule": None,
        "render_on_schedule": "always",
        "inputs_json": orjson.dumps(inputs or {}).decode(),
        "assets_json": orjson.dumps([f"doc:{name}.md#{name}"]).decode(),
        "last_slot": None,
        "approved_at": DAY_AGO,
        "awake_turn": None,
        "waiting_turn": None,
        "waiting_until": None,
        "waiting_on": None,
        "waited_status": None,
        "pending_draft": None,
    }
    return HeinzelRow(**{**base, **fields})


def _doc_input(upstream: str) -> dict[str, Any]:
    return {
        "source": "document",
        "method": "section",
        "args": {"path": f"{upstream}.md", "anchor": upstream},
    }


def _resolve(path: str) -> Path:
    return Path("/docs") / path


def _plan(
    rows: list[HeinzelRow],
    *,
    results: dict[str, dict[str, str]] | None = None,
    failed: frozenset[str] = frozenset(),
    done: set[tuple[str, str]] | None = None,
    busy: set[str] | None = None,
    capped: bool = False,
    max_wakes: int = 10,
    now: datetime = NOW,
    undelivered: set[str] | None = None,
) -> list[Any]:
    reads = upstreams(rows, _resolve)
    watches = watched(rows, reads, leave_out=busy or set())
    staged = Staged()
    for watch in (w for ws in watches.values() for w in ws):
        facets = (results or {}).get(watch.input)
        if watch.input in failed:
            staged.fail(watch.key, HzError("HZT020", "gone"))
        elif facets is not None:
            result = FetchResult(request=watch.request, facets=facets, content={}, as_of=now)
            staged.put(watch.key, result)
    clock = SlotClock()
    ctx = TickInputs(
        now=now,
        rows=rows,
        watches=watches,
        staged=staged,
        slots={r.id: slot for r in rows if (slot := due_slot(r, clock, now))},
        moves={r.id: source_moves(r, watches[r.id], staged) for r in rows if r.id in watches},
        done_keys=done or set(),
        heights=heights((r.id for r in rows), reads),
        busy=busy or set(),
        capped=capped,
        max_wakes=max_wakes,
        undelivered=undelivered or set(),
    )
    return plan_tick(ctx)


def _fp(facets: dict[str, str]) -> str:
    return FetchResult(
        request=SourceRequest(source="x", method="y", args={}), facets=facets, content={}, as_of=NOW
    ).fingerprint()


def test_a_diamond_renders_upstream_first() -> None:
    """top feeds left and right (one by name, one by its document); both feed bottom."""
    daily = {"schedule": "0 9 * * *"}
    by_name = {"source": "heinzel", "method": "approved_output",
               "args": {"heinzel": "top", "output": "top"}}  # fmt: skip
    rows = [
        _row("bottom", inputs={"l": _doc_input("left"), "r": _doc_input("right")}, **daily),
        _row("left", inputs={"t": by_name}, **daily),
        _row("right", inputs={"t": _doc_input("top")}, **daily),
        _row("top", **daily),
    ]
    plan = _plan(rows, results={"t": {"section": "1"}, "l": {"section": "2"}, "r": {"s": "3"}})
    assert [(p.name, p.height, p.action) for p in plan] == [
        ("top", 0, "run"),
        ("left", 1, "run"),
        ("right", 1, "run"),
        ("bottom", 2, "run"),
    ]
    assert {p.name: p.moved for p in plan} == {
        "top": [], "left": ["t"], "right": ["t"], "bottom": ["l", "r"]
    }  # fmt: skip


def test_a_reader_ignores_an_upstream_draft_until_it_is_approved() -> None:
    rows = [_row("a", pending_draft="k1"), _row("b", inputs={"a": _doc_input("a")})]
    assert _plan(rows, results={"a": {"section": "new"}}) == []
    rows[0].pending_draft = None
    (plan,) = _plan(rows, results={"a": {"section": "new"}})
    assert plan.name == "b" and plan.moved == ["a"]
    assert plan.wakes[0].key == f"hz-b@a:{_fp({'section': 'new'})}"


def test_a_heinzel_input_wakes_on_a_new_approval_even_while_a_draft_waits() -> None:
    """issue 12 item 6: it reads only approved text, so a waiting draft holds nothing back."""
    reads_a = {"source": "heinzel", "method": "approved_output",
               "args": {"heinzel": "a", "output": "a"}}  # fmt: skip
    rows = [_row("a", pending_draft="k2"), _row("b", inputs={"a": reads_a})]
    (plan,) = _plan(rows, results={"a": {"approved": "fp1"}})
    assert plan.name == "b" and plan.moved == ["a"]


def test_an_input_with_nothing_to_show_is_no_move_until_it_has_something() -> None:
    """issue 12 item 6: an upstream that approved nothing yet does not wake its reader."""
    reads_a = {"source": "heinzel", "method": "approved_output",
               "args": {"heinzel": "a", "output": "a"}}  # fmt: skip
    rows = [_row("a"), _row("b", inputs={"a": reads_a})]
    assert _plan(rows, results={"a": {}}) == []
    (plan,) = _plan(rows, results={"a": {"approved": "fp1"}})
    assert plan.name == "b" and plan.moved == ["a"]


def test_a_marked_inbox_runs_a_turn_unless_one_runs_anyway() -> None:
    """issue 12 item 10: requests admitted while another process held the spine are
    delivered by the next tick; a paused heinzel keeps them, a busy one is deferred."""
    marked = {"hz-quiet", "hz-due", "hz-paused", "hz-busy"}
    rows = [
        _row("quiet"),
        _row("due", schedule="0 9 * * *", last_slot="2026-06-04T09:00"),
        _row("paused", active=False),
        _row("busy", awake_turn="T1"),
    ]
    plan = _plan(rows, undelivered=marked, busy={"hz-busy"})
    assert [(p.name, p.action, len(p.wakes), p.reason) for p in plan] == [
        ("due", "run", 1, None),
        ("busy", "defer", 0, "busy"),
        ("quiet", "run", 0, None),
    ]
    capped = _plan([_row("quiet")], undelivered={"hz-quiet"}, capped=True)
    assert [(p.action, p.reason) for p in capped] == [("defer", "cap")]


def test_only_max_wakes_run_and_the_rest_wait_oldest_first() -> None:
    rows = [_row(f"h{n}", schedule="0 * * * *", last_slot=f"2026-06-05T0{n}:00") for n in range(6)]
    plan = _plan(rows, max_wakes=3)
    assert [(p.name, p.action) for p in plan] == [
        ("h0", "run"),
        ("h1", "run"),
        ("h2", "run"),
        ("h3", "defer"),
        ("h4", "defer"),
        ("h5", "defer"),
    ]
    assert all(p.reason == "max-wakes" for p in plan[3:])
    assert {p.wakes[0].key for p in plan} == {f"hz-h{n}@2026-06-05T09:00" for n in range(6)}


def test_missed_slots_coalesce_into_the_newest() -> None:
    (plan,) = _plan([_row("h", schedule="*/5 * * * *", last_slot="2026-06-04T09:00")])
    assert [w.key for w in plan.wakes] == ["hz-h@2026-06-05T09:00"]
    assert _plan([_row("h", schedule="*/5 * * * *", last_slot="2026-06-05T09:00")]) == []


def test_a_new_heinzel_owes_no_slot_from_before_its_approval() -> None:
    fresh = _row("h", schedule="0 9 * * *", approved_at="2026-06-05T09:00:10.000000Z")
    assert _plan([fresh]) == []
    assert _plan([fresh], now=NOW + timedelta(days=1))[0].action == "run"


def test_if_moved_with_nothing_moved_is_a_skip_and_a_move_is_a_run() -> None:
    seen = _fp({"a.md": "1"})
    row = _row(
        "h",
        schedule="0 9 * * *",
        render_on_schedule="if-moved",
        inputs={"notes": {**FILES, "last_fp": seen}},
    )
    (skip,) = _plan([row], results={"notes": {"a.md": "1"}})
    assert (skip.action, skip.reason, skip.moved) == ("skip", "nothing-moved", [])
    (run,) = _plan([row], results={"notes": {"a.md": "2"}})
    assert run.action == "run" and run.moved == ["notes"]
    assert [w.cause for w in run.wakes] == ["schedule", "source-changed"]
    (wait,) = _plan([row], failed={"notes"})
    assert (wait.action, wait.reason) == ("defer", "source-failed")


def test_a_move_whose_key_is_done_wakes_nobody() -> None:
    row = _row("h", inputs={"notes": {**FILES, "last_fp": "old"}})
    key = f"hz-h@notes:{_fp({'a.md': '2'})}"
    assert _plan([row], results={"notes": {"a.md": "2"}}, done={("hz-h", key)}) == []


def test_at_the_daily_cap_turns_are_skipped_and_waits_deferred() -> None:
    rows = [
        _row("h", schedule="0 9 * * *"),
        _row("w", waiting_turn="T1", waiting_until="2026-06-05T08:00:00Z"),
    ]
    plan = {p.name: p for p in _plan(rows, capped=True)}
    assert (plan["h"].action, plan["h"].reason) == ("skip", "cap")
    assert (plan["w"].action, plan["w"].reason) == ("defer", "cap")


def test_an_approved_output_goes_stale_after_valid_for() -> None:
    row = _row(
        "h",
        valid_for={"section": 86400},
        approvals={"section": ("2026-06-04T08:00:00.000000Z", False)},
    )
    (plan,) = _plan([row])
    assert [w.key for w in plan.wakes] == ["hz-h@stale:section:2026-06-05T08:00:00Z"]
    assert plan.action == "run"
    assert _plan([row], now=datetime(2026, 6, 5, 7, 0, tzinfo=UTC)) == []
    row.approvals = {"section": ("2026-06-04T08:00:00.000000Z", True)}
    assert _plan([row]) == []


def test_a_waiting_turn_resumes_on_its_condition() -> None:
    timer = _row("t", waiting_turn="T1", waiting_until="2026-06-05T08:59:00Z")
    later = _row("l", waiting_turn="T2", waiting_until="2026-06-06T08:59:00Z")
    approval = _row(
        "a",
        waiting_turn="T3",
        waiting_on={"kind": "approval", "key": "k"},
        waited_status="approved",
    )
    answer = _row(
        "q", waiting_turn="T4", waiting_on={"kind": "answer", "key": "k"}, waited_status="pending"
    )
    source = _row(
        "s",
        waiting_turn="T5",
        waiting_on={"kind": "source", "input": "notes", "fingerprint_not": "seen"},
        inputs={"notes": {**FILES, "last_fp": "seen"}},
    )
    plan = {p.name: p for p in _plan([timer, later, approval, answer, source],
                                     results={"notes": {"a.md": "2"}})}  # fmt: skip
    assert {n: (p.action, p.woken_by) for n, p in plan.items()} == {
        "t": ("resume", "timer"),
        "a": ("resume", "approval"),
        "s": ("resume", "source"),
    }
    assert plan["t"].waiting_turn == "T1"


def test_an_awake_heinzel_is_left_alone_unless_its_turn_was_cut_off() -> None:
    row = _row("h", schedule="0 9 * * *", awake_turn="T1")
    (busy,) = _plan([row], busy={"hz-h"})
    assert (busy.action, busy.reason) == ("defer", "busy")
    (orphan,) = _plan([row])
    assert orphan.action == "run"
    idle = _row("i", awake_turn="T2")
    (resume,) = _plan([idle])
    assert resume.action == "run" and resume.wakes == []


def test_inactive_heinzels_are_never_due() -> None:
    assert _plan([_row("h", schedule="0 9 * * *", active=False)]) == []


def test_rows_in_step_with_a_quiet_row_are_passed_over_and_no_move_is_missed() -> None:
    """Issue 16: the tick asks a watch whether it moved once per distinct ``inputs`` text
    (rows in step share it), and finds exactly the moves asking every row finds."""
    seen = _fp({"a": "1"})
    other = {"source": "files", "method": "glob", "args": {"pattern": "*", "root": "/other"}}
    gone = {"source": "files", "method": "glob", "args": {"pattern": "*", "root": "/gone"}}
    rows = [
        *(_row(f"step{n}", inputs={"notes": {**FILES, "last_fp": seen}}) for n in range(5)),
        *(_row(f"late{n}", inputs={"notes": {**FILES, "last_fp": "old"}}) for n in range(3)),
        *(_row(f"new{n}", inputs={"notes": other}) for n in range(2)),
        _row("broken", inputs={"notes": gone}),
        _row("reader", inputs={"doc": _doc_input("step0")}),
        _row("none"),
    ]
    reads = upstreams(rows, _resolve)
    watches = watched(rows, reads, leave_out=set())
    staged = Staged()
    for ws in watches.values():
        for watch in ws:
            if watch.request.args.get("root") == "/gone":
                staged.fail(watch.key, HzError("HZT020", "gone"))
            elif watch.request.source == "files":
                facets = {"a": "1"} if watch.request.args["root"] == "/notes" else {"b": "2"}
                result = FetchResult(request=watch.request, facets=facets, content={}, as_of=NOW)
                staged.put(watch.key, result)
    asked: list[str] = []
    move = staged.move

    def counted(key: str, watch: Watch) -> str | None:
        asked.append(watch.heinzel)
        return move(key, watch)

    staged.move = counted  # type: ignore[method-assign]
    found = _moves(rows, watches, staged)
    staged.move = move  # type: ignore[method-assign]
    every = {
        r.id: moves
        for r in rows
        if r.id in watches
        for moves in [source_moves(r, watches[r.id], staged)]
        if moves[0] or moves[1]
    }
    assert found == every
    assert set(found) == {"hz-late0", "hz-late1", "hz-late2", "hz-new0", "hz-new1", "hz-broken"}
    assert [a for a in asked if a.startswith("hz-step")] == ["hz-step0"]
