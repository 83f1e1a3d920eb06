"""gather: read each contract input (from the source cache when the tick just staged it,
else fetched) and hash it; an approval turn reads the draft as placed and the text as
approved instead, a rejection only the user's reason."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hz_kernel.adapters.sources import FetchResult, SourceRequest, sha256_hex
from hz_kernel.adapters.sources.heinzel import ApprovedOutputArgs, HeinzelSource
from hz_kernel.clock import now_utc
from hz_kernel.contracts import duration_seconds
from hz_kernel.contracts.model import InputSpec
from hz_kernel.engine.state import TurnState
from hz_kernel.errors import HzError
from hz_kernel.flow import fell_back_note, upstream_due_soon
from hz_kernel.store.bodies import read_body
from hz_kernel.store.inbox import Inbox
from hz_kernel.vocabulary import ApprovalObserved, StepDone, TurnWaiting

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner

_log = logging.getLogger("hz.turns")


async def gather(run: TurnRunner, state: TurnState) -> bool:
    """Read the inputs; True when the turn parked instead, to wait for an upstream's
    approval due within a day (``docs/flow.md``)."""
    assert run.body is not None
    contract = run.contract(state)
    last = run.held.projection.heinzel["inputs"]
    if "approval" in state.causes:
        await _gather_approval(run, state)
        return False
    parent = state.started.data.get("parent_turn")
    if parent and state.started.data.get("from_step"):
        inherited = [r for r in read_body(run.held.dir, parent) or [] if r["type"] == "input"]
    else:
        inherited = []
    gathered: list[dict[str, Any]] = []
    for record in inherited:
        gathered.append({k: v for k, v in record.items() if k not in ("ts", "type")})
    if not inherited:
        staged = _staged_fingerprints(state.keys, contract.hz.inputs)
        for name, spec in contract.hz.inputs.items():
            request = SourceRequest(source=spec.source, method=spec.method, args=spec.args)
            result = run.cache.get(request)
            # A wake the user asked for reads the source as it is now; ``recheck`` only spares
            # the tick's own rounds a fetch.
            asked = "asked" in state.causes
            fresh_for = duration_seconds(spec.recheck) if spec.recheck and not asked else 0
            now = now_utc()
            if result is None or (
                (now - result.as_of).total_seconds() > fresh_for
                and result.fingerprint(spec.facet) != staged.get(name)
            ):
                fetched = run.sources.fetch(request, now=now, previous=result)
                if result is None or _moved(fetched, result):
                    run.cache.put(fetched)
                result = fetched
            fingerprint = result.fingerprint(spec.facet)
            content = "\n\n".join(
                f"## {facet}\n{text}" if len(result.content) > 1 else text
                for facet, text in sorted(result.content.items())
            )
            item = {
                "name": name,
                "source": f"{spec.source}:{spec.method}",
                "fingerprint": fingerprint,
                "moved": fingerprint != (last.get(name) or {}).get("last_fp"),
                "content": content,
            }
            note = _fell_back(run, spec, result, now) if spec.needed_by else None
            if note is not None and spec.needed_by is not None:
                due = upstream_due_soon(spec.needed_by, now)
                if due is not None:
                    on = {"kind": "source", "input": name, "fingerprint_not": fingerprint}
                    await run.held.append(
                        TurnWaiting(step="gather", until=due, on=on), turn=state.turn
                    )
                    return True
                item |= {"fell_back": True, "note": note}
            gathered.append(item)
    for item in gathered:
        run.body.write("input", **item)
    _write_requests(run, state)
    state.inputs = gathered
    # Staged: its inputs and this line become durable with the think step's first line
    # (gathering again after a crash costs no spend and has no effect).
    run.held.stage(
        StepDone(
            step="gather",
            inputs=[
                {
                    "name": i["name"],
                    "fingerprint": i["fingerprint"],
                    "size": len(i["content"].encode()),
                    "moved": i["moved"],
                    **({"fell_back": True} if i.get("fell_back") else {}),
                }
                for i in gathered
            ],
        ),
        turn=state.turn,
    )
    state.done.append("gather")
    return False


def _moved(fetched: FetchResult, cached: FetchResult) -> bool:
    """Whether a fetch brought anything the cache lacks. A wake that finds its input as
    cached leaves the file alone (a write and a rename per turn); the tick then deems the
    cached fetch older than it is, which at worst costs it one fetch sooner."""
    return (fetched.facets, fetched.content, fetched.cursor) != (
        cached.facets,
        cached.content,
        cached.cursor,
    )


def _placed_body(run: TurnRunner, turn: str) -> list[dict[str, Any]]:
    """The records of the turn that placed a draft; none when its body is gone or refused.

    A body that is a FIFO or a directory (HZS090) must not fail the approval
    turn: its key would be spent, and the approval never recorded.
    """
    try:
        return read_body(run.held.dir, turn) or []
    except HzError as exc:
        if exc.code != "HZS090":
            raise
        _log.warning("%s; the approval is learned from without the draft as placed", exc.one_line())
        return []


async def _gather_approval(run: TurnRunner, state: TurnState) -> None:
    """An approval turn's inputs: the draft as placed and the text as the user left it.

    A rejected draft (or a declined amendment) gives only the user's reason:
    the deleted text is never shown, so nothing is learned from it.
    """
    assert run.body is not None
    draft_key_ = str(state.started.data.get("keys", [""])[0]).split("@approval:", 1)[-1]
    draft = run.held.projection.drafts.get(draft_key_)
    if draft is None or draft.get("status") == "rejected":
        await _gather_rejection(run, state, draft_key_)
        return
    placed = next(
        (
            r
            for r in _placed_body(run, str(draft.get("turn")))
            if r.get("type") == "draft" and r.get("key") == draft_key_
        ),
        {},
    )
    placed_text = str(placed.get("text", ""))
    path, _ = run.resolve_asset(str(draft.get("asset", "")))
    seen = run.documents.draft_state(path, draft_key_, placed_text=placed_text)
    if seen.status.value == "rejected":
        await _gather_rejection(run, state, draft_key_)
        return
    approved = seen.text or "" if seen.status.value == "approved" else ""
    run.body.write("approval", key=draft_key_, status=seen.status.value)
    for name, source, text in (
        ("draft_as_placed", "turn-body", placed_text),
        ("approved_text", "document", approved),
    ):
        run.body.write(
            "input",
            name=name,
            source=source,
            fingerprint=sha256_hex(text),
            moved=False,
            content=text,
        )
    run.body.sync()
    state.inputs = [
        {"name": "draft_as_placed", "content": placed_text},
        {"name": "approved_text", "content": approved},
    ]
    if seen.status.value == "approved" and draft.get("status") == "pending":
        await run.held.append(
            ApprovalObserved(
                key=draft_key_,
                approver="owner",
                share_changed=share_changed(placed_text, approved),
                output_fp=sha256_hex(" ".join(approved.split())),
            ),
            turn=state.turn,
        )
    await run.held.append(
        StepDone(
            step="gather",
            inputs=[
                {
                    "name": "draft_as_placed",
                    "fingerprint": sha256_hex(placed_text),
                    "size": len(placed_text.encode()),
                },
                {
                    "name": "approved_text",
                    "fingerprint": sha256_hex(approved),
                    "size": len(approved.encode()),
                },
            ],
        ),
        turn=state.turn,
    )
    state.done.append("gather")


async def _gather_rejection(run: TurnRunner, state: TurnState, key: str) -> None:
    """A rejection's one input: the reason the user gave with it (empty without one)."""
    assert run.body is not None
    inbox = Inbox(run.held.dir)
    reasons = [
        request.message
        for request_id in state.started.data.get("request_ids") or []
        if (request := inbox.get(str(request_id))) is not None and request.message
    ]
    reason = "\n".join(reasons)
    run.body.write("approval", key=key, status="rejected")
    run.body.write(
        "input",
        name="rejection_reason",
        source="user",
        fingerprint=sha256_hex(reason),
        moved=False,
        content=reason,
    )
    run.body.sync()
    state.inputs = [{"name": "rejection_reason", "content": reason}]
    await run.held.append(
        StepDone(
            step="gather",
            inputs=[
                {
                    "name": "rejection_reason",
                    "fingerprint": sha256_hex(reason),
                    "size": len(reason.encode()),
                }
            ],
        ),
        turn=state.turn,
    )
    state.done.append("gather")


def _fell_back(run: TurnRunner, spec: InputSpec, result: FetchResult, now: datetime) -> str | None:
    """Why this turn reads an upstream's older approved text, or none at all
    (``docs/flow.md``): a newer draft of the output waits for its owner. None when nothing
    waits."""
    request = result.request
    adapter = run.sources.adapter_for(request)
    if not isinstance(adapter, HeinzelSource) or spec.needed_by is None:
        return None
    args = request.parse_args(ApprovedOutputArgs)
    if adapter.waiting_since(args, request.describe()) is None:
        return None
    approved = bool(result.facets)
    return fell_back_note(args.heinzel, args.output, spec.needed_by, now, approved=approved)


def _write_requests(run: TurnRunner, state: TurnState) -> None:
    """Copy the texts of the requests this turn answers into its body."""
    assert run.body is not None
    inbox = Inbox(run.held.dir)
    for request_id in state.started.data.get("request_ids") or []:
        request = inbox.get(str(request_id))
        if request is not None and request.message:
            run.body.write("request", request_id=request.request_id, message=request.message)


def share_changed(before: str, after: str) -> float:
    """The share of words the user changed between the draft and the approved text."""
    old, new = before.split(), after.split()
    if not old and not new:
        return 0.0
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return round(1.0 - matcher.ratio(), 4)


def _staged_fingerprints(keys: list[str], inputs: Mapping[str, object]) -> dict[str, str]:
    """Each input a source wake names, with the fingerprint that woke it.

    The tick staged exactly that arrival in the cache before it woke the
    turn; gathering it again would fetch twice and could read content the
    wake's key does not name.
    """
    staged: dict[str, str] = {}
    for key in keys:
        occasion = key.split("@", 1)[-1]
        name, _, fingerprint = occasion.rpartition(":")
        if name in inputs and fingerprint:
            staged[name] = fingerprint
    return staged
