"""The operations table: every command of the kernel as a request and a response model.

This table is the single source of the kernel's interface. The in-process
client dispatches on it, the daemon builds its routes from it and the HTTP
client its calls, so no command can exist on one side of the wire only.
Each operation names the ``Kernel`` method that serves it; the request's
fields are that method's keyword arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hz_kernel import api
from hz_kernel.store.inbox import REQUEST_ID_PATTERN

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)


#: The most heinzel ids one ``heinzel.list`` may name; more are listed whole.
MAX_LISTED_IDS = 1000


#: A client's idempotency key, checked here so a malformed one is refused as a bad field
#: (``HZD010`` on the wire, ``HZU101`` on the command line) before the kernel sees it.
RequestId = Annotated[str, Field(pattern=REQUEST_ID_PATTERN, max_length=64)]


class Request(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


@dataclass(frozen=True)
class Operation(Generic[Req, Resp]):
    """One command: its wire name, shapes, the kernel method and whether it changes state."""

    name: str
    request: type[Req]
    response: type[Resp]
    handler: str
    writes: bool
    summary: str

    def wrap(self, result: Any) -> Resp:
        """Turn what the kernel method returned into the response model."""
        if isinstance(result, self.response):
            return result
        if isinstance(result, list):
            return self.response.model_validate({"items": result})
        return self.response.model_validate(result)


class Empty(Request):
    pass


class Done(BaseModel):
    model_config = ConfigDict(defer_build=True)

    ok: bool = True


class HeinzelRef(Request):
    ref: str = Field(min_length=1, max_length=200)


class ListRequest(Request):
    state: str | None = None
    artifact: str | None = None
    contract: str | None = None
    where: dict[str, str] | None = None
    ids: list[str] | None = Field(default=None, max_length=MAX_LISTED_IDS)
    """Only these heinzels (a client refreshing rows whose spines moved)."""


class ContractRequest(Request):
    ref: str
    version: int | None = Field(default=None, ge=1)
    """The version to show; None: the newest."""
    against: int | None = Field(default=None, ge=1)
    """Diff from this version; None: the one before ``version``."""


class VerifyRequest(Request):
    ref: str | None = None
    accept: bool = False


class VerifyList(BaseModel):
    model_config = ConfigDict(defer_build=True)

    items: list[api.VerifyReport]


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
    approver: str = "owner"


class RejectRequest(Request):
    ref: str = Field(min_length=1, max_length=400)
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
    message: str = Field(min_length=1, max_length=api.CHAT_MESSAGE_MAX_CHARS)
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


class TurnBodyRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    turn: str | None = Field(default=None, pattern=r"^[0-9A-HJKMNP-TV-Z]{26}$")
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
    if json_bytes(text) > api.COMPOSER_TEXT_MAX_BYTES:
        raise ValueError(f"the text is over {api.COMPOSER_TEXT_MAX_BYTES} bytes")
    return text


def _outgoing_fits(outgoing: api.ComposerOutgoing | None) -> api.ComposerOutgoing | None:
    """The message being sent obeys ``heinzel.chat``'s own limits, or it could never be cleared."""
    if outgoing is None:
        return None
    if not re.fullmatch(REQUEST_ID_PATTERN, outgoing.request_id):
        raise ValueError("the outgoing request id is not 1-64 letters, digits, '-' or '_'")
    if not 1 <= len(outgoing.message) <= api.CHAT_MESSAGE_MAX_CHARS:
        raise ValueError(f"the outgoing message is not 1-{api.CHAT_MESSAGE_MAX_CHARS} characters")
    return outgoing


class ComposerSaveRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    base: int = Field(strict=True, ge=0, lt=2**53)
    """The revision the window last saw: the save happens only over that one (a JSON integer)."""
    text: Annotated[str, AfterValidator(_fits_composer)]
    mode: Literal["steer", "queue"] = "queue"
    outgoing: Annotated[api.ComposerOutgoing | None, AfterValidator(_outgoing_fits)] = None
    window: WindowId | None = None


class ComposerSentRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    request_id: RequestId
    """The message the inbox took: cleared (with its text, if unchanged) and kept in history."""
    window: WindowId | None = None


class TranscriptRequest(Request):
    ref: str = Field(min_length=1, max_length=200)
    turn: str | None = Field(default=None, pattern=r"^[0-9A-HJKMNP-TV-Z]{26}$")
    """The turn (a ULID); None: the heinzel's newest turn that ran."""
    after_offset: int = Field(default=0, ge=0)
    """Body records after this byte offset: a transcript that follows a live turn reads on."""


class DraftKey(Request):
    key: str = Field(min_length=1, max_length=600)


LIST = Operation(
    "heinzel.list", ListRequest, api.HeinzelList, "list_heinzels", False, "List heinzels"
)
SHOW = Operation("heinzel.show", HeinzelRef, api.HeinzelDetail, "show", False, "Show one heinzel")
VERIFY = Operation(
    "heinzel.verify", VerifyRequest, VerifyList, "verify", True, "Check spines' hash chains"
)
REINDEX = Operation(
    "heinzel.reindex", Empty, api.ReindexReport, "reindex", True, "Rebuild the index"
)
PRUNE = Operation("heinzel.prune", Empty, api.PruneReport, "prune", True, "Delete expired bodies")

NEW = Operation("heinzel.new", NewRequest, api.NewHeinzel, "new", True, "Create a heinzel")
CONTRACT = Operation(
    "heinzel.contract",
    ContractRequest,
    api.ContractView,
    "contract",
    False,
    "A contract version, a diff, what waits",
)
TEMPLATES = Operation(
    "heinzel.templates", Empty, api.TemplateList, "templates", False, "List contract templates"
)
IMPORT = Operation(
    "heinzel.import", ImportRequest, api.ImportReport, "import_dir", True, "Import a folder"
)
APPROVE = Operation("approve", ApproveRequest, api.Decision, "approve", True, "Approve")
REJECT = Operation("reject", RejectRequest, api.Decision, "reject", True, "Reject or decline")
AMEND = Operation("heinzel.amend", AmendRequest, api.Amendment, "amend", True, "Propose a contract")
PAUSE = Operation("heinzel.pause", HeinzelRef, api.Decision, "pause", True, "Pause")
UNPAUSE = Operation("heinzel.unpause", HeinzelRef, api.Decision, "unpause", True, "Unpause")
RETIRE = Operation("heinzel.retire", HeinzelRef, api.Decision, "retire", True, "Retire")
UNRETIRE = Operation("heinzel.unretire", HeinzelRef, api.Decision, "unretire", True, "Unretire")
RENAME = Operation("heinzel.rename", RenameRequest, api.Decision, "rename", True, "Rename")

WAKE = Operation("heinzel.wake", WakeRequest, api.TurnReport, "wake", True, "Run a turn now")
RESUME = Operation(
    "heinzel.resume", HeinzelRef, api.TurnReport, "resume", True, "Continue a cut or parked turn"
)
CHAT = Operation("heinzel.chat", ChatRequest, api.Admitted, "chat", True, "Send a message")
INBOX = Operation("heinzel.inbox", HeinzelRef, api.InboxList, "inbox", False, "The inbox")
STOP = Operation("heinzel.stop", StopRequest, api.TurnReport, "stop", True, "Stop the turn")
RETRY = Operation("heinzel.retry", RetryRequest, api.TurnReport, "retry", True, "Try again")
ANSWER = Operation("heinzel.answer", AnswerRequest, api.TurnReport, "answer", True, "Answer")
DISMISS = Operation("heinzel.dismiss", DismissRequest, api.Decision, "dismiss", True, "Dismiss")
TURN_BODY = Operation(
    "turn.body", TurnBodyRequest, api.TurnBody, "turn_body", False, "A turn's events and body"
)
COMPOSER = Operation(
    "composer.get", HeinzelRef, api.ComposerText, "composer", False, "A heinzel's unsent message"
)
COMPOSER_SAVE = Operation(
    "composer.save",
    ComposerSaveRequest,
    api.ComposerSaved,
    "composer_save",
    True,
    "Keep unsent text over the revision a window saw",
)
COMPOSER_SENT = Operation(
    "composer.sent",
    ComposerSentRequest,
    api.ComposerText,
    "composer_sent",
    True,
    "Clear a message the inbox took; remember it",
)
TRANSCRIPT = Operation(
    "turn.transcript",
    TranscriptRequest,
    api.TurnTranscript,
    "turn_transcript",
    False,
    "A turn whole: cause, inputs, context, requests, effects",
)
CONVERSATION = Operation(
    "heinzel.conversation",
    HeinzelRef,
    api.Conversation,
    "conversation",
    False,
    "The messages sent to a heinzel and the turns they reached",
)
DIFF = Operation("draft.diff", DraftKey, api.DraftDiff, "draft_diff", False, "A draft's diff")
REVIEW = Operation(
    "draft.review",
    DraftKey,
    api.DraftReview,
    "draft_review",
    False,
    "A draft with its text as placed and the section's last approved text",
)
TICK = Operation("tick", Empty, api.TickReport, "tick_once", True, "Wake what is due, once")
DRAFTS = Operation("drafts", Empty, api.DraftList, "drafts", False, "Drafts waiting for review")
SPEND = Operation(
    "costs.today", Empty, api.SpendToday, "spend_today", False, "Spent today against the cap"
)

OPERATIONS: dict[str, Operation[Any, Any]] = {
    op.name: op
    for op in (
        LIST, SHOW, CONTRACT, VERIFY, REINDEX, PRUNE, NEW, TEMPLATES, IMPORT, APPROVE, REJECT,
        AMEND, PAUSE, UNPAUSE, RETIRE, UNRETIRE, RENAME, WAKE, RESUME, DRAFTS, TICK, CHAT, INBOX,
        STOP, RETRY, ANSWER, DISMISS, DIFF, REVIEW, TURN_BODY, SPEND, COMPOSER, COMPOSER_SAVE,
        COMPOSER_SENT, TRANSCRIPT, CONVERSATION,
    )
}  # fmt: skip
