"""What a model-callable tool is, the registry that holds them, and how a result is bounded.

A tool is a plain function over validated arguments and the turn's ``Grant``;
it returns text or raises an ``HzError`` whose code the model sees as the
call's result. Journalling, refusals outside the grant and resuming after a
crash are the journal's business (``journal.py``), the same for every tool.
A tool that acts in the world (``perform``) is a coroutine instead: the
journal hands it an ``EffectCall`` so it writes the effect ledger itself,
``effect.started`` durable before it acts.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from hz_kernel.errors import HzError

if TYPE_CHECKING:
    from hz_kernel.config import Settings
    from hz_kernel.engine.tools.grant import Grant
    from hz_kernel.vocabulary import EventData

SHOWN_HEAD_CHARS = 6000
SHOWN_TAIL_CHARS = 2000
"""What the model is shown of a long result: its first and its last characters."""

NOT_GRANTED = "HZE061"
OUTSIDE_ROOTS = "HZE062"
NOT_READABLE = "HZE063"
BAD_ARGUMENTS = "HZE064"
INTERRUPTED = "HZE069"


class ToolArgs(BaseModel):
    """Base of every tool's arguments: a key the tool does not know is an error."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


def refused(code: str, message: str, place: str) -> HzError:
    """A coded refusal or failure, shown to the model as the call's result."""
    return HzError(code, message, place)


@dataclass(frozen=True)
class EffectCall:
    """What the journal lends a tool that acts in the world, for one call.

    ``begin`` makes ``effect.started`` durable under ``key`` (the tool calls it
    once its arguments are checked, right before it acts); ``append`` adds the
    effect's outcome and its own events to the spine; ``record`` writes a
    turn body record and tells live readers of it (``sync`` for one that must
    survive a crash at once).
    """

    key: str
    call: int
    settings: Settings
    deadline: datetime | None
    begin: Callable[[str, str | None], Awaitable[None]]
    append: Callable[[EventData], Awaitable[None]]
    record: Callable[[str, dict[str, Any], bool], None]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, the capability that grants it and whether running it twice is harmless.

    ``replay_safe`` decides what a resume does with a call a crash cut short: a
    safe one runs again, an unsafe one is settled ``interrupted`` and never runs
    a second time. Exactly one of ``run`` (a read, run in a worker thread) and
    ``perform`` (an effect, awaited in the turn's task, so stopping the turn
    cancels it) is given.
    """

    name: str
    capability: str
    description: str
    args: type[ToolArgs]
    run: Callable[[ToolArgs, Grant], str] | None = None
    replay_safe: bool = True
    action: Callable[[ToolArgs], str] | None = None
    """The line a successful call adds to the heinzel's action log (``action.reported``)."""
    perform: Callable[[ToolArgs, Grant, EffectCall], Awaitable[str]] | None = None
    recover: (
        Callable[[EffectCall, Sequence[dict[str, Any]], frozenset[str]], Awaitable[str]] | None
    ) = None
    """For a tool that performs: the result of the call rebuilt from the body records it
    wrote (since the step's context), when its effect was done before a crash cut the call
    short; raises ``HzError`` as the call would have. It is given the spine kinds already
    under the effect's key, and may append what the crash kept from the spine. Without it
    such a call is interrupted."""

    def __post_init__(self) -> None:
        if (self.run is None) == (self.perform is None):
            raise ValueError(f"the tool {self.name!r} needs exactly one of run and perform")
        if self.perform is not None and self.replay_safe:
            raise ValueError(f"the tool {self.name!r} performs an effect: it is not replay-safe")

    def schema(self) -> dict[str, Any]:
        """The arguments' JSON schema, generated once per process (every turn offers it); each
        caller gets its own copy, parsed from the cached text (a deep copy cost ~100 Python
        calls a tool, every turn)."""
        schema: dict[str, Any] = json.loads(_schema_text_of(self.args))
        return schema

    def schema_text(self) -> str:
        return _schema_text_of(self.args)


@functools.cache
def _schema_of(args: type[ToolArgs]) -> dict[str, Any]:
    return args.model_json_schema()


@functools.cache
def _schema_text_of(args: type[ToolArgs]) -> str:
    return json.dumps(_schema_of(args))


class ToolRegistry:
    """The tools a turn may offer, by name; a name is registered once."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}

    def register(self, spec: ToolSpec) -> ToolSpec:
        if spec.name in self._tools:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = spec
        return spec

    def unregister(self, name: str) -> None:
        """Take a tool out again (a test's own tool, once the test is done)."""
        del self._tools[name]

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._tools.values())


def bounded(text: str) -> tuple[str, bool]:
    """What the model gets of ``text``: all of it, or its head and tail around a marked cut."""
    if len(text) <= SHOWN_HEAD_CHARS + SHOWN_TAIL_CHARS:
        return text, False
    left_out = len(text) - SHOWN_HEAD_CHARS - SHOWN_TAIL_CHARS
    marker = f"\n[hz: {left_out} characters left out here; the turn body keeps the whole result]\n"
    return text[:SHOWN_HEAD_CHARS] + marker + text[-SHOWN_TAIL_CHARS:], True


GRANTED = " Granted: "
NOT_GRANTED_NOTE = " Not granted: needs {capability}, which your contract does not require."


def describe(spec: ToolSpec, roots: Sequence[str] | None) -> str:
    """A tool's description as one turn offers it: the roots it may reach (a JSON list), or
    that it is not granted (``None``)."""
    if roots is None:
        return spec.description + NOT_GRANTED_NOTE.format(capability=spec.capability)
    return spec.description + GRANTED + json.dumps(list(roots), ensure_ascii=False)


def roots_in(description: str) -> list[str]:
    """The roots a tool's description grants; none when the tool is not granted."""
    _, found, listed = description.rpartition(GRANTED)
    return [str(root) for root in json.loads(listed)] if found else []
