"""Commands on one heinzel, each exactly one kernel operation through the client.

The cockpit never changes state itself: an action sends its operation and
reports the answer; the spine the kernel appends then reaches the screen
through the live path like any other change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hz_kernel import operations as ops
from hz_tui import display


@dataclass(frozen=True)
class HeinzelAction:
    """One action as the keys, the palette and the help screen name it."""

    name: str
    label: str
    help: str
    acts_on: str = "the selected heinzel"
    """What the palette says it acts on: approving approves what the heinzel waits for."""

    @property
    def title(self) -> str:
        return f"{self.label} {self.acts_on}"


ACTIONS = (
    HeinzelAction(
        "approve",
        "Approve",
        "Approve what waits: a draft, a contract, an amendment",
        "what the selected heinzel waits for",
    ),
    HeinzelAction(
        "reject",
        "Reject",
        "Reject the waiting draft or decline the amendment",
        "what the selected heinzel waits for",
    ),
    HeinzelAction("wake", "Wake", "Run a turn now (cause: asked)"),
    HeinzelAction("resume", "Continue", "Continue a turn that was cut off or is parked"),
    HeinzelAction("pause", "Pause or unpause", "Stop or restart its wakes"),
    HeinzelAction("retire", "Retire or unretire", "Keep it but never wake it (reversible)"),
)


def request_for(
    action: str, heinzel_id: str, state: str | None, item: str | None = None
) -> tuple[ops.Operation[Any, Any], ops.Request]:
    """The operation and request that carry out ``action`` on a heinzel in ``state``.

    Approve and reject name the heinzel (its one waiting item), or with ``item``
    (a short key) exactly that item, as ``hz approve NAME@SHORT-KEY`` does.
    """
    ref = ops.HeinzelRef(ref=heinzel_id)
    decided = f"{heinzel_id}@{item}" if item else heinzel_id
    if action == "approve":
        return ops.APPROVE, ops.ApproveRequest(ref=decided)
    if action == "reject":
        return ops.REJECT, ops.RejectRequest(ref=decided)
    if action == "wake":
        from ulid import ULID  # its import costs ~30 ms: not before the first frame

        return ops.WAKE, ops.WakeRequest(ref=heinzel_id, request_id=f"cockpit-{ULID()}")
    if action == "resume":
        return ops.RESUME, ref
    if action == "pause":
        return (ops.UNPAUSE if state == "paused" else ops.PAUSE), ref
    if action == "retire":
        return (ops.UNRETIRE if state == "retired" else ops.RETIRE), ref
    raise ValueError(f"unknown heinzel action {action!r}")


def confirmation(
    action: str, name: str, state: str | None, waits: bool
) -> tuple[str, str, str] | None:
    """The question to ask before ``action`` (question, what it does, the yes label), or None.

    Retiring stops every wake of the heinzel and rejecting what ``waits``
    deletes a draft's section, so both ask; the other actions are undone by
    their opposite key (and a reject with nothing waiting is only refused).
    """
    if action == "retire" and state != "retired":
        return (
            f"Retire {name}?",
            "It keeps its files and history but never wakes again until you unretire it.",
            "Retire",
        )
    if action == "reject" and waits:
        return (
            f"Reject what {name} waits on?",
            "A draft's section is deleted from the document; a proposed contract is declined.",
            "Reject",
        )
    return None


#: What a decision decided on (approved or rejected), and what other actions read as done.
_DECIDED = ("draft", "amendment", "contract")
_DONE = {
    "pause": "paused",
    "unpause": "unpaused",
    "retire": "retired",
    "unretire": "unretired",
    "rename": "renamed",
    "dismiss": "lesson dismissed",
}


def describe(name: str, result: object) -> str:
    """One line saying what the kernel did."""
    from hz_kernel.api import Decision, TurnReport  # answers, built once the first frame is up

    if isinstance(result, Decision):
        if result.what in _DECIDED:
            verb = "rejected" if result.declined else "approved"
            version = f" v{result.version}" if result.version else ""
            return f"{name}: {result.what}{version} {verb}; now {result.state}"
        done = _DONE.get(result.what, result.what)
        return f"{name}: {done}" + ("" if done == result.state else f"; now {result.state}")
    if isinstance(result, TurnReport):
        if result.status == "waiting":
            return f"{name}: turn {display.queued(result.reason or 'capacity')}"
        if result.status == "requested":
            return f"{name}: queued behind the running turn"
        ending = result.disposition or result.status
        return f"{name}: turn {ending}" + (f": {result.report}" if result.report else "")
    return f"{name}: done"
