"""Every tool call of a think step, journalled before it runs and settled after a crash.

One call, in order: the messages the model has sent so far (``tool_messages``)
and the call with its arguments (``tool_call``) go to the turn body and are
synced; ``tool.started`` (name, argument hash, ``replay_safe``) is durable in
the spine; the tool runs; its whole result (``tool_result``) goes to the body;
``tool.finished`` (result hash, size, truncated flag or error code) closes it.
Arguments and results stay out of the spine; the model gets the result's
head and tail (``base.bounded``).

A call is known by its place in the step's conversation (``call``: the n-th
tool call the model made), which is the same when the step is resumed from
the recorded messages. Resumed after a crash, a call that has a result in the
body is answered from it and never run again; one that started without a
result runs again when the tool is replay-safe, and otherwise is settled
``tool.interrupted`` and the model is told so (``HZE069``). A tool that acts in
the world (``ToolSpec.perform``) keeps the effect ledger under the key
``<heinzel>@<tool>:<turn>:<seq of its tool.started>``; an effect it began and
a crash cut short is settled ``effect.interrupted`` with the call, and one that
was done is answered from the tool's own body records (``ToolSpec.recover``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.tools import ToolDefinition

from hz_kernel import crashpoints
from hz_kernel.adapters.sources import canonical_json, sha256_hex
from hz_kernel.engine.attempts import messages_from_json, messages_to_json
from hz_kernel.engine.tools.base import (
    BAD_ARGUMENTS,
    INTERRUPTED,
    NOT_GRANTED,
    NOT_READABLE,
    EffectCall,
    ToolRegistry,
    ToolSpec,
    bounded,
    describe,
)
from hz_kernel.engine.tools.grant import Grant
from hz_kernel.errors import HzError
from hz_kernel.observe import Observation
from hz_kernel.store.envelope import Event
from hz_kernel.vocabulary import (
    ActionReported,
    EffectInterrupted,
    EffectStarted,
    EventData,
    ToolFinished,
    ToolInterrupted,
    ToolStarted,
)

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner
    from hz_kernel.engine.state import TurnState

_log = logging.getLogger("hz.tools")

#: Body records of tool calls, in the order one call writes them.
MESSAGES, CALL, RESULT = "tool_messages", "tool_call", "tool_result"
#: The spine kinds that settle an effect.
EFFECT_OUTCOMES = ("effect.done", "effect.failed", "effect.interrupted")


def scope(events: Sequence[Event], turn: str) -> list[Event]:
    """The turn's events since its think step last began afresh: a wait ends that step (the
    turn thinks again from its inputs), a crash does not (it is resumed)."""
    mine: list[Event] = []
    for event in reversed(events):  # back to where it began: a turn's own few lines
        if event.turn != turn:
            continue
        mine.append(event)
        if event.kind == "turn.started" or (
            event.kind == "turn.resumed" and event.data.get("woken_by") != "restart"
        ):
            break
    mine.reverse()
    return mine


def since_context(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The body records written since the think step last built its context."""
    last = max((n for n, r in enumerate(records) if r.get("type") == "context"), default=-1)
    return list(records[last + 1 :])


def tool_calls_began(events: Sequence[Event], turn: str) -> bool:
    """Whether the think step under way already journalled a tool call (so it is resumed from
    its recorded messages, not begun again)."""
    return any(event.kind == ToolStarted.kind for event in scope(events, turn))


class ToolJournal:
    """Runs one think step's tool calls for the model: granted, journalled, bounded, resumable."""

    def __init__(
        self,
        run: TurnRunner,
        state: TurnState,
        registry: ToolRegistry,
        grant: Grant,
        records: Sequence[dict[str, Any]],
    ) -> None:
        self.run = run
        self.state = state
        self.turn = state.turn
        self.registry = registry
        self.grant = grant
        self.results: dict[int, dict[str, Any]] = {}
        self.messages: list[dict[str, Any]] = []
        self.records = since_context(records)
        for record in self.records:
            if record.get("type") == MESSAGES:
                self.messages.extend(record.get("messages") or [])
            elif record.get("type") == RESULT:
                self.results[int(record["call"])] = record
        self.started: dict[int, Event] = {}
        self.closed: set[int] = set()
        self.effects: dict[str, Event] = {}
        """Effects begun in this step and not settled, by key."""
        self.effects_done: set[str] = set()
        self.keyed: dict[str, set[str]] = {}
        """The spine kinds recorded under each effect key of this step."""
        for event in scope(run.held.scan.events, state.turn):
            if event.key is not None:
                self.keyed.setdefault(event.key, set()).add(event.kind)
            if event.kind == ToolStarted.kind:
                self.started[int(event.data["call"])] = event
            elif event.kind in (ToolFinished.kind, ToolInterrupted.kind):
                self.closed.add(int(event.data["call"]))
            elif event.kind == EffectStarted.kind:
                self.effects[str(event.data["key"])] = event
            elif event.kind in EFFECT_OUTCOMES:
                self.effects.pop(str(event.data["key"]), None)
                if event.kind == "effect.done":
                    self.effects_done.add(str(event.data["key"]))

    def described(self) -> str:
        """Every tool as the model is told of it (name, description, argument schema): its
        share of the request, for the context's size."""
        return "\n".join(
            f"{spec.name}: {self._descriptions[spec.name]} {spec.schema_text()}"
            for spec in self.registry
        )

    def history(self) -> list[ModelMessage]:
        """The conversation as recorded up to the last model answer that called tools."""
        return messages_from_json(self.messages) if self.messages else []

    def definitions(self) -> list[ToolDefinition]:
        """Every registered tool as the model is told of it; calls run one at a time, in call
        order, so the spine reads the same on every run."""
        return [
            ToolDefinition(
                name=spec.name,
                description=self._descriptions[spec.name],
                parameters_json_schema=spec.schema(),
                sequential=True,
            )
            for spec in self.registry
        ]

    @functools.cached_property
    def _descriptions(self) -> dict[str, str]:
        """Each tool's description with what this turn's grant names (the context's size and
        the request both need them)."""
        return {spec.name: self._describe(spec) for spec in self.registry}

    def _describe(self, spec: ToolSpec) -> str:
        if spec.capability not in self.grant.capabilities:
            return describe(spec, None)
        grant = self.grant
        named: tuple[object, ...] = {
            "files:read": (*grant.folders, *grant.files),
            "git:read": grant.repos,
            "http:read": grant.urls,
            "heinzels:read": tuple(f"{h}:{o}" for h, o in grant.upstreams),
            "documents:read": tuple(k.asset for k in grant.kept),
            "agents:handoff": (*grant.folders, *grant.repos),
        }.get(spec.capability, ())
        return describe(spec, [str(root) for root in named])

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        messages: Sequence[ModelMessage],
        call_id: str,
    ) -> dict[str, Any]:
        """Run one call the model made, or settle it from the record of an earlier run."""
        spec = self.registry.get(name)
        if spec is None:
            raise ValueError(f"no tool named {name!r} is offered")
        number = _ordinal(messages, call_id)
        self._record_messages(messages)
        body = self.run.body
        assert body is not None
        if number in self.results:
            record = self.results[number]
            if number not in self.closed:
                await self._finished(record, found=True)
            return _answer(record)
        cut_short = number in self.started and number not in self.closed
        if (
            cut_short
            and spec.recover is not None
            and self._effect_key(spec, number) in (self.effects_done)
        ):
            record = {"call": number, "call_id": call_id, "tool": spec.name}
            recorded = frozenset(self.keyed.get(self._effect_key(spec, number), ()))
            try:
                effect = self._effect_call(spec, number)
                _result_into(record, await spec.recover(effect, self.records, recorded))
            except HzError as exc:
                record.update(error=exc.code, message=exc.one_line())
            self._write(RESULT, record)
            self.results[number] = record
            await self._finished(record, found=True)
            return _answer(record)
        if cut_short and not spec.replay_safe:
            record = {
                "call": number,
                "call_id": call_id,
                "tool": spec.name,
                "error": INTERRUPTED,
                "message": "the process stopped while this call ran; it is not run again, "
                "so whatever it did may or may not have happened",
            }
            self._write(RESULT, record)
            begun = self.effects.pop(self._effect_key(spec, number), None)
            if begun is not None:
                await self.run.held.append(
                    EffectInterrupted(key=begun.data["key"], effect=begun.data["effect"]),
                    turn=self.turn,
                    key=begun.data["key"],
                )
                self.state.effects_done.add(str(begun.data["key"]))
            await self.run.held.append(
                ToolInterrupted(call=number, call_id=call_id, tool=spec.name), turn=self.turn
            )
            self.results[number] = record
            self.closed.add(number)
            return _answer(record)
        rerun = number in self.started
        self._write(
            CALL, {"call": number, "call_id": call_id, "tool": spec.name, "args": arguments}
        )
        self.started[number] = await self.run.held.append(
            ToolStarted(
                call=number,
                call_id=call_id,
                tool=spec.name,
                args_hash=sha256_hex(canonical_json(arguments)),
                replay_safe=spec.replay_safe,
                rerun=rerun,
            ),
            turn=self.turn,
        )
        record = {"call": number, "call_id": call_id, "tool": spec.name}
        try:
            result = await self._perform(spec, arguments, number)
            crashpoints.reached("tool:before-result")
            if spec.action is not None:
                line = spec.action(spec.args.model_validate(arguments))
                await self.run.held.append(ActionReported(by="model", line=line), turn=self.turn)
        except HzError as exc:
            record.update(error=exc.code, message=exc.one_line())
        except Exception as exc:  # a tool's own failure is the model's to read, not the turn's end
            _log.warning("tool %s failed: %r", spec.name, exc)
            failed = HzError(NOT_READABLE, f"the tool failed: {type(exc).__name__}", spec.name)
            record.update(error=failed.code, message=failed.one_line())
        else:
            _result_into(record, result)
        self._write(RESULT, record)
        self.results[number] = record
        await self._finished(record, found=False)
        return _answer(record)

    async def _perform(self, spec: ToolSpec, arguments: dict[str, Any], number: int) -> str:
        if spec.capability not in self.grant.capabilities:
            raise HzError(
                NOT_GRANTED,
                f"{spec.name} needs {spec.capability}, which this heinzel's contract does not "
                "require",
                spec.name,
            )
        try:
            args = spec.args.model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "arguments"
            raise HzError(BAD_ARGUMENTS, f"{where}: {first['msg']}", spec.name) from None
        if spec.perform is not None:
            return await spec.perform(args, self.grant, self._effect_call(spec, number))
        assert spec.run is not None
        return await asyncio.to_thread(spec.run, args, self.grant)

    def _effect_key(self, spec: ToolSpec, number: int) -> str:
        return f"{self.run.held.id}@{spec.name}:{self.turn}:{self.started[number].seq}"

    def _effect_call(self, spec: ToolSpec, number: int) -> EffectCall:
        """What a tool that acts in the world writes its part of the journal with."""
        key = self._effect_key(spec, number)
        held, state = self.run.held, self.state

        async def begin(effect: str, target: str | None) -> None:
            started = await held.append(
                EffectStarted(key=key, effect=effect, target=target), turn=self.turn, key=key
            )
            state.effects_started[key] = started
            self.effects[key] = started

        async def append(payload: EventData) -> None:
            await held.append(payload, turn=self.turn, key=key)
            if payload.kind in EFFECT_OUTCOMES:
                state.effects_done.add(key)
                self.effects.pop(key, None)

        deadline = state.started.data.get("deadline")
        return EffectCall(
            key=key,
            call=number,
            settings=self.run.settings,
            deadline=datetime.fromisoformat(str(deadline)) if deadline else None,
            begin=begin,
            append=append,
            record=self._write,
        )

    async def _finished(self, record: dict[str, Any], *, found: bool) -> None:
        result = str(record.get("result") or "")
        await self.run.held.append(
            ToolFinished(
                call=int(record["call"]),
                call_id=str(record.get("call_id") or ""),
                tool=str(record["tool"]),
                result_hash=sha256_hex(result) if "error" not in record else None,
                size=len(result),
                truncated=bool(record.get("truncated")),
                error=record.get("error"),
                found_on_resume=found,
            ),
            turn=self.turn,
        )
        self.closed.add(int(record["call"]))

    def _record_messages(self, messages: Sequence[ModelMessage]) -> None:
        """The conversation so far, in the body before the call it led to: a resume begins there."""
        if len(messages) <= len(self.messages):
            return
        fresh = messages_to_json(messages[len(self.messages) :])
        body = self.run.body
        assert body is not None
        body.write(MESSAGES, messages=fresh)
        self.messages.extend(fresh)

    def _write(self, record_type: str, fields: dict[str, Any], sync: bool = True) -> None:
        """A body record, durable unless ``sync`` is off, told to live readers (the live turn
        shows each call)."""
        body = self.run.body
        assert body is not None
        offset = body.size
        body.write(record_type, **fields)
        if sync:
            body.sync()
        delta = {"type": record_type, **_shown_fields(fields), "offset": offset, "end": body.size}
        self.run.kernel.observe(Observation(heinzel=self.run.held.id, turn=self.turn, body=delta))


def _shown_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """What a live reader gets of a record: the result as the model got it, never more."""
    shown = {k: v for k, v in fields.items() if k not in ("result", "shown")}
    if "result" in fields:
        shown["shown"] = fields.get("shown", fields["result"])
    return shown


def _result_into(record: dict[str, Any], result: str) -> None:
    """A call's whole result into its record, with what the model is shown of it."""
    shown, truncated = bounded(result)
    record.update(result=result, truncated=truncated, size=len(result))
    if truncated:
        record["shown"] = shown


def _answer(record: dict[str, Any]) -> dict[str, Any]:
    """What the model gets back: the bounded result, or the error's code and line."""
    if "error" in record:
        return {"tool": record["tool"], "error": record["error"], "message": record["message"]}
    return {
        "tool": record["tool"],
        "result": record.get("shown", record["result"]),
        "truncated": record["truncated"],
        "size": record["size"],
    }


def _ordinal(messages: Sequence[ModelMessage], call_id: str) -> int:
    """The place of a call among all tool calls of the conversation (0 for the first)."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    earlier = sum(1 for m in responses[:-1] for part in m.parts if isinstance(part, ToolCallPart))
    last = [part for part in responses[-1].parts if isinstance(part, ToolCallPart)]
    index = next((n for n, part in enumerate(last) if part.tool_call_id == call_id), len(last))
    return earlier + index
