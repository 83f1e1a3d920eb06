"""The request models of every operation but ``heinzel.list`` (``hz_kernel.operations``).

A listing is what a head asks first, often alone (``hz heinzel list``): its
request lives in the table's module, and these are created when a command
first names one, through that module (``ops.WakeRequest``). A field's
docstring here is its argument's meaning for an agent (``operations.meaning``).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hz_kernel.operations import Request
from hz_kernel.store.inbox import REQUEST_ID_PATTERN
from hz_kernel.terms import ACTION_LINE_MAX, action_line

#: A client's idempotency key, checked here so a malformed one is refused as a bad field
#: (``HZD010`` on the wire, ``HZU101`` on the command line) before the kernel sees it.
RequestId = Annotated[str, Field(pattern=REQUEST_ID_PATTERN, max_length=64)]


_TURN_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def _turn_id(value: str) -> str:
    """A turn's ULID, in any case (ULIDs are case-insensitive; hz writes them upper-case)."""
    upper = value.strip().upper()
    if not _TURN_ID.fullmatch(upper):
        raise ValueError("not a turn id: 26 letters and digits, as hz heinzel show lists them")
    return upper


def _one_line(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError("must be one line")
    return value


#: A turn id as the user may type it: upper- or lower-case.
TurnId = Annotated[str, AfterValidator(_turn_id)]
OneLine = Annotated[str, AfterValidator(_one_line)]


#: The longest chat message, in characters (``heinzel.chat``, the composer's Enter).
CHAT_MESSAGE_MAX_CHARS = 64 * 1024
#: The most a composer's text may take as a JSON string, in bytes (``composer.save``): room
#: for a chat message at its limit in 4-byte characters, and with an outgoing message at its
#: limit (384 KiB at worst, 6 bytes a character) a save stays under the daemon's 1 MiB cap.
COMPOSER_TEXT_MAX_BYTES = 512 * 1024


class ComposerOutgoing(BaseModel):
    """A composer's message on its way to the inbox, with the request id it keeps until taken."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")

    request_id: str
    message: str
    mode: Literal["steer", "queue"]


class Empty(Request):
    pass


class Done(BaseModel):
    model_config = ConfigDict(defer_build=True)

    ok: bool = True


class HeinzelRef(Request):
    ref: str = Field(min_length=1, max_length=200)


class ContractRequest(Request):
    ref: str
    version: int | None = Field(default=None, ge=1)
    """The version to show; None: the newest."""
    against: int | None = Field(default=None, ge=1)
    """Diff from this version; None: the one before ``version``."""


class VerifyRequest(Request):
    ref: str | None = None
    accept: bool = False


class DoctorRequest(Request):
    model: str | None = Field(default=None, max_length=400)
    """Check this model string only; None: the home's default and every heinzel's."""
    ask: bool = True
    """Ask each model a tiny question (False: only check that it is configured)."""


class NewRequest(Request):
    text: str | None = Field(default=None, max_length=256 * 1024)
    template: str | None = None
    sentence: str | None = Field(default=None, max_length=2000)
    params: dict[str, str] | None = None
    source: str = "contract"


class ImportRequest(Request):
    path: str


class ApproveRequest(Request):
    ref: str = Field(min_length=1, max_length=400)
    """A draft's key (as drafts lists it), or a heinzel's name or id for its proposed contract."""
    approver: str = "owner"


class RejectRequest(Request):
    ref: str = Field(min_length=1, max_length=400)
    """A draft's key (as drafts lists it), or a heinzel's name or id for its proposed contract."""
    reason: str | None = Field(default=None, max_length=2000)
    request_id: RequestId | None = None


class AmendRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    text: str = Field(max_length=256 * 1024)
    reason: str | None = Field(default=None, max_length=600)
    source: str = "amendment"


class RenameRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    name: str


class StopRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    hand_back: bool = False
    """Also withdraw the chat messages the stopped turn would leave to the next one and answer
    them (``handed_back``): the cockpit puts them back in the composer, unsent."""


class WakeRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    request_id: RequestId | None = None


class ChatRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    message: str = Field(min_length=1, max_length=CHAT_MESSAGE_MAX_CHARS)
    mode: Literal["steer", "queue"] = "queue"
    request_id: RequestId | None = None


class RetryRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    hint: str | None = Field(default=None, max_length=4000)
    request_id: RequestId | None = None


class AnswerRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    message: str = Field(min_length=1, max_length=64 * 1024)
    request_id: RequestId | None = None


class DismissRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    lesson_id: str = Field(min_length=1, max_length=100)


class ForgetRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    turn: TurnId
    instead: str | None = Field(default=None, min_length=1, max_length=600)
    """What the model reads in the turn's place (None: nothing)."""


class TurnBodyRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    turn: TurnId | None = None
    """The turn to read (a ULID: it names a file); None: the heinzel's newest turn that ran."""
    after_offset: int = Field(default=0, ge=0)
    """Body records after this byte offset (the ``offset`` a previous answer gave)."""
    types: list[str] | None = Field(default=None, max_length=20)
    """Only body records of these types (e.g. ``chunk``); None: all."""


#: A window's id: who wrote a composer revision (letters, digits, ``-``, ``_``).
WindowId = Annotated[str, Field(pattern=REQUEST_ID_PATTERN, max_length=64)]


def json_bytes(text: str) -> int:
    """What ``text`` takes as a JSON string on the wire and on disk."""
    return len(orjson.dumps(text))


def _fits_composer(text: str) -> str:
    if json_bytes(text) > COMPOSER_TEXT_MAX_BYTES:
        raise ValueError(f"the text is over {COMPOSER_TEXT_MAX_BYTES} bytes")
    return text


def _outgoing_fits(outgoing: ComposerOutgoing | None) -> ComposerOutgoing | None:
    """The message being sent obeys ``heinzel.chat``'s own limits, or it could never be cleared."""
    if outgoing is None:
        return None
    if not re.fullmatch(REQUEST_ID_PATTERN, outgoing.request_id):
        raise ValueError("the outgoing request id is not 1-64 letters, digits, '-' or '_'")
    if not 1 <= len(outgoing.message) <= CHAT_MESSAGE_MAX_CHARS:
        raise ValueError(f"the outgoing message is not 1-{CHAT_MESSAGE_MAX_CHARS} characters")
    return outgoing


class ComposerSaveRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    base: int = Field(strict=True, ge=0, lt=2**53)
    """The revision the window last saw: the save happens only over that one (a JSON integer)."""
    text: Annotated[str, AfterValidator(_fits_composer)]
    mode: Literal["steer", "queue"] = "queue"
    outgoing: Annotated[ComposerOutgoing | None, AfterValidator(_outgoing_fits)] = None
    window: WindowId | None = None


class ComposerSentRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    request_id: RequestId
    """The message the inbox took: cleared (with its text, if unchanged) and kept in history."""
    window: WindowId | None = None


class TranscriptRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    turn: TurnId | None = None
    """The turn (a ULID); None: the heinzel's newest turn that ran."""
    after_offset: int = Field(default=0, ge=0)
    """Body records after this byte offset: a transcript that follows a live turn reads on."""


class ReportRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    line: Annotated[str, AfterValidator(action_line)] = Field(
        min_length=1, max_length=ACTION_LINE_MAX
    )
    request_id: RequestId | None = None


class ActionsRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    limit: int = Field(default=200, ge=1, le=2000)


class GraphRequest(Request):
    heinzel: str | None = Field(default=None, min_length=1, max_length=200)
    """Only the edges of this heinzel (a name or id)."""
    asset: str | None = Field(default=None, min_length=1, max_length=600)
    """Only the edges that touch this asset (``doc:path#anchor``)."""
    source: str | None = Field(default=None, min_length=1, max_length=2000)
    """Only the edges that touch this source (``git:/repo``, ``files:notes/*.md``, …)."""


class DraftKey(Request):
    key: str = Field(min_length=1, max_length=600)
