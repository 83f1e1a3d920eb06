"""The closed word lists of the vocabulary: steps, causes, dispositions, reasons.

They live apart from the event models (``hz_kernel.vocabulary``, which
re-exports them) so that what only needs the words (a tick report, a
listing, a head) does not load some forty event models to get them.
"""

from __future__ import annotations

from typing import Literal

STEP_NAMES: tuple[str, ...] = ("gather", "think", "outcome", "act", "finish")
Step = Literal["gather", "think", "outcome", "act", "finish"]

Cause = Literal[
    "created", "schedule", "source-changed", "discovered", "asked", "approval", "retry", "stale"
]
Disposition = Literal[
    "drafted",
    "asked",
    "learned",
    "proposed",
    "summarised",
    "nothing",
    "skipped",
    "failed",
    "abandoned",
    "waited",
]
SkipReason = Literal[
    "nothing-moved",
    "check-unmet",
    "done-when-unmet",
    "cap",
    "throttled",
    "paused",
    "damaged",
    "held-by",
]
#: A roster handle: lower-case letters, digits, ``.``, ``_``, ``-`` (no spaces, no ``@``).
HANDLE = r"^[a-z0-9][a-z0-9._-]{0,38}$"

WokenBy = Literal["timer", "source", "approval", "answer", "asked", "restart"]
