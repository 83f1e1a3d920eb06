"""``report``: the model adds one line to the heinzel's action log about what it did.

Every turn may call it (``actions:report`` is always granted). The line is
written to the spine as ``action.reported`` by the journal, under the same
lint as every spine line (no e-mail address, one line, bounded). Not
replay-safe: a call a crash cut short is settled interrupted, so a line is
never logged twice.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from hz_kernel.engine.tools.base import ToolArgs, ToolRegistry, ToolSpec
from hz_kernel.engine.tools.grant import Grant
from hz_kernel.terms import ACTION_LINE_MAX, action_line


class ReportArgs(ToolArgs):
    line: Annotated[str, AfterValidator(action_line)] = Field(
        min_length=1,
        max_length=ACTION_LINE_MAX,
        description="one line: what you did, checked or decided, for the user's action log",
    )


def _noted(args: ToolArgs, grant: Grant) -> str:
    return "noted in the action log"


def _line(args: ToolArgs) -> str:
    assert isinstance(args, ReportArgs)
    return args.line


def register(registry: ToolRegistry) -> None:
    registry.register(
        ToolSpec(
            name="report",
            capability="actions:report",
            description=(
                "Add one line to the action log the user reads: what you did, checked or "
                "decided this turn. Never quote documents or name people."
            ),
            args=ReportArgs,
            run=_noted,
            replay_safe=False,
            action=_line,
        )
    )
