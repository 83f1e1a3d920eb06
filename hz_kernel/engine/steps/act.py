"""act: hz performs the outcome in code, each effect through the ledger (``effect.started``
before, ``effect.done`` or ``effect.failed`` after): place the draft with its key, record
the lessons, file the amendment, ask the question, or park the turn waiting."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from hz_kernel import crashpoints
from hz_kernel.adapters.documents import DraftStatus, FoundSection
from hz_kernel.adapters.sources import sha256_hex
from hz_kernel.clock import now_utc
from hz_kernel.contracts import ContractError
from hz_kernel.engine.outcome import (
    AmendmentOutcome,
    DraftOutcome,
    LessonsOutcome,
    QuestionOutcome,
    SummaryOutcome,
    WaitOutcome,
    quotes_document,
)
from hz_kernel.engine.state import TurnState, load_state
from hz_kernel.engine.wakes import draft_key
from hz_kernel.errors import HzError
from hz_kernel.store.bodies import BodyWriter, read_body
from hz_kernel.vocabulary import (
    DraftPlaced,
    DraftSuperseded,
    EffectDone,
    EffectFailed,
    EffectInterrupted,
    EffectStarted,
    LessonRecorded,
    QuestionAsked,
    StepDone,
    SummaryWritten,
    TurnWaiting,
)

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner

PLACE_DRAFT = "documents.place_draft"
EDITS_WAIT = (
    "edits-wait: your edits to the pending draft wait: approve or reject it first;"
    " the new draft follows then"
)
"""The report of a turn that holds its draft back so as not to replace the user's edits."""
APPROVAL_WAIT = (
    "approval-wait: you approved the pending draft while this turn ran: hz records your"
    " approval first; the new draft follows then"
)
"""The report of a turn that holds its draft back because the user approved the pending one
(in the file, or with ``hz approve``) while it ran, before hz had observed that approval."""


async def act(run: TurnRunner, state: TurnState) -> bool:
    """Perform the outcome's effects through the ledger; True when the turn now waits."""
    outcome = state.outcome
    assert outcome is not None
    token = state.started.data.get("token")
    visible = (DraftOutcome, AmendmentOutcome, QuestionOutcome)
    if token is not None and isinstance(outcome, visible) and not state.effects_started:
        await run.kernel.check_lease(
            run.held.id, int(token), str(run.held.projection.heinzel["name"])
        )
    if isinstance(outcome, DraftOutcome):
        decided = _decided_pending(run, state)
        if decided is not None:
            return await _wait_for_decision(run, state, *decided)
        await _place_draft(run, state, outcome)
        await _supersede_parked(run, state)
    elif isinstance(outcome, LessonsOutcome):
        known = set(run.held.projection.lessons)
        active = {
            _rule(str(row.get("lesson") or ""))
            for row in run.held.projection.lessons.values()
            if not row.get("dismissed")
        }
        document = [
            str(i.get("content", "")) for i in state.inputs if i["name"] != "rejection_reason"
        ]
        for n, lesson in enumerate(outcome.lessons):
            lesson_id = f"L-{state.turn[-8:]}-{n}"
            if (
                lesson_id in known
                or _rule(lesson.lesson) in active
                or quotes_document(lesson.lesson, document)
            ):
                continue
            active.add(_rule(lesson.lesson))
            hunks = "\n".join(lesson.hunks)
            await run.held.append(
                LessonRecorded(
                    lesson_id=lesson_id,
                    lesson=lesson.lesson,
                    hunks=len(lesson.hunks),
                    hunks_hash=sha256_hex(hunks) if hunks else None,
                    from_key=state.keys[0] if state.keys else None,
                ),
                turn=state.turn,
            )
    elif isinstance(outcome, QuestionOutcome):
        key = f"{run.held.id}@q:{state.turn}"
        if key not in run.held.projection.questions:
            await run.held.append(
                QuestionAsked(key=key, question=outcome.question), turn=state.turn, key=key
            )
        # The turn that asked waits for the answer and goes on with it (``hz heinzel
        # answer`` resumes it), rather than a later turn meeting the answer without the
        # question's reasons.
        return await _wait(run, state, outcome.report, {"kind": "answer", "key": key}, None)
    elif isinstance(outcome, AmendmentOutcome):
        await _propose(run, state, outcome)
    elif isinstance(outcome, SummaryOutcome):
        await run.held.append(
            SummaryWritten(
                asset=outcome.asset,
                wants=outcome.wants,
                decisions=list(outcome.decisions),
                open_questions=list(outcome.open_questions),
                next_deadline=outcome.next_deadline,
                sources=list(outcome.sources),
                previous_seq=run.held.projection.heinzel["last_summary_seq"],
                covers_through_seq=state.started.seq,
            ),
            turn=state.turn,
        )
    elif isinstance(outcome, WaitOutcome):
        on = outcome.on.model_dump(mode="json") if outcome.on else None
        return await _wait(run, state, outcome.report, on, outcome.until)
    run.held.stage(StepDone(step="act"), turn=state.turn)
    state.done.append("act")
    return False


async def _wait(
    run: TurnRunner,
    state: TurnState,
    report: str,
    on: dict[str, object] | None,
    until: datetime | None,
) -> bool:
    """Park the turn until ``until`` (at most the home's longest wait) or ``on`` is met."""
    until = until or now_utc() + timedelta(days=run.settings.heinzel.max_wait_days)
    await run.held.append(StepDone(step="act", report=report), turn=state.turn)
    state.done.append("act")
    await _supersede_parked(run, state)
    await run.held.append(TurnWaiting(step="act", until=until, on=on), turn=state.turn)
    return True


async def _supersede_parked(run: TurnRunner, state: TurnState) -> None:
    """End every other turn of this heinzel still parked: abandoned, reason ``superseded``.

    A turn that placed a newer draft, or parks in its turn, has made an older
    parked turn's plans stale; resumed, that turn would act on a version of
    the work that is gone (and only the newest parked turn is ever woken).
    """
    events = run.held.scan.events
    projection = run.held.projection
    parked_turns = [
        str(row["turn"])
        for row in projection.live("turns", projection.turns)
        if row.get("status") == "waiting" and row["turn"] != state.turn
    ]
    for turn in parked_turns:
        parked = load_state(events, turn)
        if parked is None:
            continue
        ender = type(run)(run.kernel, run.held)
        ender.body = BodyWriter(run.held.dir, turn)
        try:
            await ender.abandon(parked, "superseded")
        finally:
            ender.body.close()


def _decided_pending(run: TurnRunner, state: TurnState) -> tuple[str, str] | None:
    """A pending draft this one would replace that the user edited since it was placed, or
    approved (its tag line gone) before hz observed the approval, with the report to wait
    under: placing over it would throw the user's edits, or their approved text, away."""
    projection = run.held.projection
    assets = {publish.asset for publish in run.contract(state).hz.publishes}
    for draft in projection.live("drafts", projection.drafts):
        key = str(draft["key"])
        if draft.get("asset") not in assets:
            continue
        if key in state.placed or key in state.effects_started:
            continue
        placed = next(
            (
                str(r.get("text", ""))
                for r in read_body(run.held.dir, str(draft.get("turn"))) or []
                if r.get("type") == "draft" and r.get("key") == key
            ),
            "",
        )
        path, _ = run.resolve_asset(str(draft["asset"]))
        seen = run.documents.draft_state(path, key, placed_text=placed)
        if seen.status is DraftStatus.EDITED:
            return key, EDITS_WAIT
        if seen.status is DraftStatus.APPROVED:
            return key, APPROVAL_WAIT
    return None


async def _wait_for_decision(run: TurnRunner, state: TurnState, key: str, report: str) -> bool:
    """Hold the new draft back until the user's decision on the pending one is recorded.

    Nothing is placed, so no effect is open; the turn waits on the draft's
    decision and, woken by it, thinks again and places its draft then. A
    wake before the decision (a restart) finds the edits still there and
    waits again.
    """
    await run.held.append(StepDone(step="act", report=report), turn=state.turn)
    state.done.append("act")
    await _supersede_parked(run, state)
    await run.held.append(
        TurnWaiting(step="act", on={"kind": "approval", "key": key}), turn=state.turn
    )
    return True


async def _place_draft(run: TurnRunner, state: TurnState, outcome: DraftOutcome) -> None:
    assert run.body is not None
    contract = run.contract(state)
    row = run.held.projection.heinzel
    for publish in contract.hz.publishes:
        asset = publish.asset
        key = draft_key(run.held.id, state.version, state.keys[0], asset)
        if key in state.placed:
            continue
        path, anchor = run.resolve_asset(asset)

        def place(path: Path = path, anchor: str | None = anchor, key: str = key) -> str:
            placed = run.documents.place_draft(
                path,
                anchor,
                key=key,
                heinzel_name=str(row["name"]),
                heinzel_id=run.held.id,
                contract_version=state.version,
                text=outcome.text,
            )
            return placed.section.text

        if key not in state.effects_started:
            run.body.write("draft", key=key, asset=asset, text=outcome.text)
            run.body.sync()
            await run.held.append(
                EffectStarted(key=key, effect=PLACE_DRAFT), turn=state.turn, key=key
            )
            found_on_resume = False
            section_text = await _perform(run, state, key, place)
            crashpoints.reached("effect:before-done")
        elif key not in state.effects_done:
            found = run.documents.find(path, key)
            found_on_resume = found is not None
            section_text = (
                found.text if found is not None else await _perform(run, state, key, place)
            )
        else:
            found = run.documents.find(path, key)
            section_text, found_on_resume = (found.text if found else outcome.text), False
        if key not in state.effects_done:
            # Staged, like the lines after it up to ``turn.finished``: lost in a crash, the
            # resume finds the draft in its document by key and records them then.
            run.held.stage(
                EffectDone(key=key, hash=sha256_hex(section_text), found_on_resume=found_on_resume),
                turn=state.turn,
                key=key,
            )
            state.effects_done.add(key)
        await _record_draft(run, state, key, asset, outcome.text)


async def _perform(run: TurnRunner, state: TurnState, key: str, effect: Callable[[], str]) -> str:
    """Perform an effect whose ``effect.started`` is durable; a failure is ``effect.failed``."""
    try:
        return effect()
    except HzError as exc:
        await run.held.append(
            EffectFailed(key=key, error=exc.one_line()[:600]), turn=state.turn, key=key
        )
        state.effects_done.add(key)
        raise


async def _record_draft(run: TurnRunner, state: TurnState, key: str, asset: str, text: str) -> None:
    """``draft.placed`` for a draft that is in its document: the user's pending draft."""
    projection = run.held.projection
    for old in projection.live("drafts", projection.drafts):
        if old["key"] != key and old.get("asset") == asset:
            run.held.stage(DraftSuperseded(key=str(old["key"]), by=key), turn=state.turn)
    run.held.stage(
        DraftPlaced(
            key=key,
            asset=asset,
            output=next(iter(run.contract(state).hz.outputs), "section"),
            hash=sha256_hex(text),
            size=len(text.encode()),
            contract_version=state.version,
        ),
        turn=state.turn,
        key=key,
    )
    state.placed.add(key)


async def settle_effects(run: TurnRunner, state: TurnState) -> None:
    """Close what a turn that ends unfinished left open, so no effect stays untracked.

    A draft that is in its document (done, or found there by key) becomes
    the pending draft; an effect not found was cut off and is never
    performed now: ``effect.interrupted``.
    """
    done = {
        str(e.data.get("key"))
        for e in run.held.scan.events
        if e.turn == state.turn and e.kind == "effect.done"
    }
    unsettled = [
        key
        for key in state.effects_started
        if key not in state.placed and (key in done or key not in state.effects_done)
    ]
    if not unsettled:
        return
    drafts = {
        str(r.get("key")): r
        for r in read_body(run.held.dir, state.turn) or []
        if r.get("type") == "draft"
    }
    for key in unsettled:
        effect = str(state.effects_started[key].data.get("effect"))
        record = drafts.get(key, {})
        asset = str(record.get("asset") or key.split("@", 3)[-1])
        found = _find_draft(run, asset, key) if effect == PLACE_DRAFT else None
        if key not in done:
            state.effects_done.add(key)
            if found is None:
                await run.held.append(
                    EffectInterrupted(key=key, effect=effect), turn=state.turn, key=key
                )
                continue
            await run.held.append(
                EffectDone(key=key, hash=sha256_hex(found.text), found_on_resume=True),
                turn=state.turn,
                key=key,
            )
        text = record.get("text") or (found.text if found is not None else None)
        if effect == PLACE_DRAFT and text:
            await _record_draft(run, state, key, asset, str(text))


def _find_draft(run: TurnRunner, asset: str, key: str) -> FoundSection | None:
    """The section with ``key`` in its document; None when absent or unreadable."""
    try:
        return run.documents.find(run.resolve_asset(asset)[0], key)
    except HzError:
        return None


async def _propose(run: TurnRunner, state: TurnState, outcome: AmendmentOutcome) -> None:
    if any(e.kind == "amendment.proposed" and e.turn == state.turn for e in run.held.scan.events):
        return
    try:
        await run.kernel.amend(  # type: ignore[attr-defined]
            ref=run.held.id,
            text=outcome.text,
            by="heinzel",
            reason=outcome.reason,
            source=f"turn {state.turn}",
        )
    except ContractError as exc:
        state.report = f"{outcome.report} (refused: {exc.code})"


def _rule(lesson: str) -> str:
    """A lesson's wording compared as a rule: the same words, whatever the case and spacing.

    Two approvals with the same kind of edit teach one lesson, not two.
    """
    return " ".join(lesson.casefold().split()).rstrip(".")
