"""The closed word lists of the vocabulary: steps, causes, dispositions, reasons.

They live apart from the event models (``hz_kernel.vocabulary``, which
re-exports them) so that what only needs the words (a tick report, a
listing, a head) does not load some forty event models to get them.
"""

from __future__ import annotations

import unicodedata
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


#: The longest line of the action log.
ACTION_LINE_MAX = 300
#: Characters an action line may not hold: controls, invisible format characters (bidi
#: overrides, zero widths), line and paragraph separators, surrogates.
_UNSHOWN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def action_line(value: str) -> str:
    """An action-log line as it may be recorded: one visible line, or ValueError saying why.

    What a terminal would break, hide or reorder is refused rather than
    escaped: the log is read by people and the line is theirs (or the model's)
    to say again plainly.
    """
    if not value.strip():
        raise ValueError("must say something (it is empty or only spaces)")
    odd = next((c for c in value if unicodedata.category(c) in _UNSHOWN), None)
    if odd is not None:
        raise ValueError(
            f"must be one line of visible text (it holds U+{ord(odd):04X}, "
            f"{unicodedata.name(odd, 'a control character').lower()})"
        )
    return value
