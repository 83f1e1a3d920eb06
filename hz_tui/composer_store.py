"""What one window's composer holds, and how it meets the text the kernel keeps for every window.

The kernel keeps a heinzel's unsent message under a revision
(``composer.get`` / ``composer.save`` / ``composer.sent``), so two windows on
one heinzel — two cockpits here, or one attached with ``--connect`` — share
it. A window saves over the revision it last saw; when another window saved
first, ``reconcile`` says what to do: take the newer text (this window typed
nothing since), save again over it (the change was this window's own, or
did not touch the text), or ask the user (keep mine / take theirs / both).

The message being sent is saved with its request id before it goes out:
when the acknowledgement is lost, sending again reuses the id and the
kernel's inbox returns the message it already has instead of taking a second.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from ulid import ULID

from hz_kernel.api import ComposerOutgoing as Outgoing
from hz_kernel.api import ComposerText, InboxItem

Mode = Literal["steer", "queue"]
Choice = Literal["mine", "theirs", "both"]
Reconciled = Literal["take", "rebase", "conflict"]

__all__ = [
    "Choice",
    "ComposerState",
    "HistoryWalk",
    "Mode",
    "Outgoing",
    "reconcile",
    "same_message",
]


def new_window_id() -> str:
    """This window's name on the revisions it writes."""
    return f"window-{ULID()}"


class ComposerState(BaseModel):
    """The composer as this window shows it: its text, its STEER/QUEUE mode, what is being sent."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    text: str = ""
    mode: Mode = "queue"
    outgoing: Outgoing | None = None

    @classmethod
    def of(cls, saved: ComposerText) -> ComposerState:
        return cls(text=saved.text, mode=saved.mode, outgoing=saved.outgoing)

    def same_as(self, saved: ComposerText) -> bool:
        return (self.text, self.mode, self.outgoing) == (saved.text, saved.mode, saved.outgoing)

    def sending(self) -> ComposerState:
        """The state to save before sending the text: its outgoing message and request id.

        The id is minted once per message; the same text in the same mode,
        sent again before an acknowledgement came, keeps the id it had.
        """
        message = self.text.strip()
        kept = self.outgoing
        if kept is not None and kept.message == message and kept.mode == self.mode:
            return self
        outgoing = Outgoing(request_id=f"cockpit-{ULID()}", message=message, mode=self.mode)
        return self.model_copy(update={"outgoing": outgoing})

    def acknowledged(self, request_id: str) -> ComposerState:
        """The kernel has ``request_id``: forget it, and the text if it is still that message."""
        sent = self.outgoing
        if sent is None or sent.request_id != request_id:
            return self
        text = "" if self.text.strip() == sent.message else self.text
        return self.model_copy(update={"outgoing": None, "text": text})

    def given_back(self, items: list[InboxItem], typed: str) -> ComposerState:
        """The messages a stopped turn gave back, before ``typed`` (the text on screen now),
        in the mode they had.

        When they all had one mode, that is the mode; otherwise the mode the
        user had chosen stays. The kernel withdrew them (``heinzel.stop`` with
        ``hand_back``), so none is sent unless the user sends it again, under
        a new request id.
        """
        messages = "\n\n".join(item.message for item in items)
        modes = {item.mode for item in items}
        mode: Mode = self.mode
        if modes == {"steer"} or modes == {"queue"}:
            mode = "steer" if modes == {"steer"} else "queue"
        text = f"{messages}\n\n{typed}" if typed else messages
        return ComposerState(text=text, mode=mode)

    def resolved(self, choice: Choice, theirs: ComposerText) -> ComposerState:
        """The text the user chose when another window's newer text met this one's."""
        if choice == "theirs":
            return ComposerState.of(theirs)
        if choice == "mine" or not theirs.text.strip():
            return self.model_copy(update={"outgoing": self.outgoing or theirs.outgoing})
        both = f"{theirs.text.rstrip()}\n\n{self.text.lstrip()}"
        return ComposerState(text=both, mode=self.mode)


def reconcile(
    base: ComposerText, mine: ComposerState, theirs: ComposerText, window: str
) -> Reconciled:
    """What a window does whose save over ``base`` found the newer revision ``theirs``.

    ``take``: show theirs (this window's text is as it was at ``base``);
    ``rebase``: save this window's text over theirs (theirs was this
    window's own save whose answer was lost, or left the text as it was, or
    is the same text); ``conflict``: both changed the text; the user chooses.
    Two windows that pressed Enter on one message at once: the one whose
    save came second takes the first's request id, so the message goes once;
    on two different messages, each goes (the second save rebases).
    """
    if theirs.window == window:
        return "rebase"
    if mine.outgoing is not None and same_message(mine.outgoing, theirs.outgoing):
        return "take"
    if mine.outgoing is not None and (theirs.outgoing is not None or not theirs.text.strip()):
        # Each window sends its own message (both go, once each); or the other window's text
        # has gone out already and left nothing of theirs in the composer to lose.
        return "rebase"
    if mine.text == base.text:
        return "take" if mine.same_as(base) or theirs.text != base.text else "rebase"
    if theirs.text in (base.text, mine.text):
        return "rebase"
    return "conflict"


def same_message(mine: Outgoing, theirs: Outgoing | None) -> bool:
    """Whether ``theirs`` sends the words ``mine`` would, in the same mode (under any id)."""
    return theirs is not None and (theirs.message, theirs.mode) == (mine.message, mine.mode)


class HistoryWalk:
    """↑/↓ through the messages sent, as shells do: past the newest, the draft comes back."""

    def __init__(self) -> None:
        self.position: int | None = None
        self.draft = ""

    @property
    def walking(self) -> bool:
        return self.position is not None

    def older(self, history: list[str], text: str) -> str | None:
        """The entry before the one shown (None: there is none); remembers the draft first."""
        if self.position is None:
            if not history:
                return None
            self.draft = text
            self.position = len(history)
        if self.position == 0:
            return None
        self.position = min(self.position, len(history)) - 1
        return history[self.position]

    def newer(self, history: list[str]) -> str | None:
        """The entry after the one shown, or the draft past the newest (None: not walking)."""
        if self.position is None:
            return None
        self.position += 1
        if self.position >= len(history):
            self.position = None
            return self.draft
        return history[self.position]

    def stop(self) -> None:
        """The user edited the text shown: it is the draft now."""
        self.position = None
