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
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar, cast

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hz_kernel import overview
from hz_kernel.store.inbox import REQUEST_ID_PATTERN
from hz_kernel.terms import ACTION_LINE_MAX, action_line

if TYPE_CHECKING:
    from hz_kernel import api

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)


#: The most heinzel ids one ``heinzel.list`` may name; more are listed whole.
MAX_LISTED_IDS = 1000


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


class Request(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


@dataclass(frozen=True)
class Operation(Generic[Req, Resp]):
    """One command: its wire name, shapes, the kernel method and whether it changes state."""

    name: str
    request: type[Req]
    answer: str
    """The name of its response model in ``hz_kernel.api``, looked up on first use: importing
    the table (a cockpit's start does) does not create every answer model, and answering
    with a shape of ``hz_kernel.overview`` (a listing) creates none of the others."""
    handler: str
    writes: bool
    summary: str

    @property
    def response(self) -> type[Resp]:
        found = getattr(overview, self.answer, None)
        if found is None:
            from hz_kernel import api

            found = getattr(api, self.answer)
        return cast("type[Resp]", found)

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
    """Retrying with the same id records the line once."""


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


LIST: Operation[ListRequest, api.HeinzelList] = Operation(
    "heinzel.list", ListRequest, "HeinzelList", "list_heinzels", False, "List heinzels"
)
SHOW: Operation[HeinzelRef, api.HeinzelDetail] = Operation(
    "heinzel.show", HeinzelRef, "HeinzelDetail", "show", False, "Show one heinzel"
)
VERIFY: Operation[VerifyRequest, api.VerifyList] = Operation(
    "heinzel.verify", VerifyRequest, "VerifyList", "verify", True, "Check spines' hash chains"
)
DOCTOR: Operation[DoctorRequest, api.DoctorReport] = Operation(
    "doctor", DoctorRequest, "DoctorReport", "doctor", False, "Check the models turns use"
)
REINDEX: Operation[Empty, api.ReindexReport] = Operation(
    "heinzel.reindex", Empty, "ReindexReport", "reindex", True, "Rebuild the index"
)
PRUNE: Operation[Empty, api.PruneReport] = Operation(
    "heinzel.prune", Empty, "PruneReport", "prune", True, "Delete expired bodies"
)

NEW: Operation[NewRequest, api.NewHeinzel] = Operation(
    "heinzel.new", NewRequest, "NewHeinzel", "new", True, "Create a heinzel"
)
CONTRACT: Operation[ContractRequest, api.ContractView] = Operation(
    "heinzel.contract",
    ContractRequest,
    "ContractView",
    "contract",
    False,
    "A contract version, a diff, what waits",
)
TEMPLATES: Operation[Empty, api.TemplateList] = Operation(
    "heinzel.templates", Empty, "TemplateList", "templates", False, "List contract templates"
)
IMPORT: Operation[ImportRequest, api.ImportReport] = Operation(
    "heinzel.import", ImportRequest, "ImportReport", "import_dir", True, "Import a folder"
)
APPROVE: Operation[ApproveRequest, api.Decision] = Operation(
    "approve", ApproveRequest, "Decision", "approve", True, "Approve"
)
REJECT: Operation[RejectRequest, api.Decision] = Operation(
    "reject", RejectRequest, "Decision", "reject", True, "Reject or decline"
)
AMEND: Operation[AmendRequest, api.Amendment] = Operation(
    "heinzel.amend", AmendRequest, "Amendment", "amend", True, "Propose a contract"
)
PAUSE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.pause", HeinzelRef, "Decision", "pause", True, "Pause"
)
UNPAUSE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.unpause", HeinzelRef, "Decision", "unpause", True, "Unpause"
)
RETIRE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.retire", HeinzelRef, "Decision", "retire", True, "Retire"
)
UNRETIRE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.unretire", HeinzelRef, "Decision", "unretire", True, "Unretire"
)
RENAME: Operation[RenameRequest, api.Decision] = Operation(
    "heinzel.rename", RenameRequest, "Decision", "rename", True, "Rename"
)

WAKE: Operation[WakeRequest, api.TurnReport] = Operation(
    "heinzel.wake", WakeRequest, "TurnReport", "wake", True, "Run a turn now"
)
RESUME: Operation[HeinzelRef, api.TurnReport] = Operation(
    "heinzel.resume", HeinzelRef, "TurnReport", "resume", True, "Continue a cut or parked turn"
)
CHAT: Operation[ChatRequest, api.Admitted] = Operation(
    "heinzel.chat", ChatRequest, "Admitted", "chat", True, "Send a message"
)
INBOX: Operation[HeinzelRef, api.InboxList] = Operation(
    "heinzel.inbox", HeinzelRef, "InboxList", "inbox", False, "The inbox"
)
STOP: Operation[StopRequest, api.TurnReport] = Operation(
    "heinzel.stop", StopRequest, "TurnReport", "stop", True, "Stop the turn"
)
RETRY: Operation[RetryRequest, api.TurnReport] = Operation(
    "heinzel.retry", RetryRequest, "TurnReport", "retry", True, "Try again"
)
ANSWER: Operation[AnswerRequest, api.TurnReport] = Operation(
    "heinzel.answer", AnswerRequest, "TurnReport", "answer", True, "Answer"
)
DISMISS: Operation[DismissRequest, api.Decision] = Operation(
    "heinzel.dismiss", DismissRequest, "Decision", "dismiss", True, "Dismiss"
)
FORGET: Operation[ForgetRequest, api.Decision] = Operation(
    "heinzel.forget", ForgetRequest, "Decision", "forget", True, "Hide a turn from the model"
)
TURN_BODY: Operation[TurnBodyRequest, api.TurnBody] = Operation(
    "turn.body", TurnBodyRequest, "TurnBody", "turn_body", False, "A turn's events and body"
)
COMPOSER: Operation[HeinzelRef, api.ComposerText] = Operation(
    "composer.get", HeinzelRef, "ComposerText", "composer", False, "A heinzel's unsent message"
)
COMPOSER_SAVE: Operation[ComposerSaveRequest, api.ComposerSaved] = Operation(
    "composer.save",
    ComposerSaveRequest,
    "ComposerSaved",
    "composer_save",
    True,
    "Keep unsent text over the revision a window saw",
)
COMPOSER_SENT: Operation[ComposerSentRequest, api.ComposerText] = Operation(
    "composer.sent",
    ComposerSentRequest,
    "ComposerText",
    "composer_sent",
    True,
    "Clear a message the inbox took; remember it",
)
TRANSCRIPT: Operation[TranscriptRequest, api.TurnTranscript] = Operation(
    "turn.transcript",
    TranscriptRequest,
    "TurnTranscript",
    "turn_transcript",
    False,
    "A turn whole: cause, inputs, context, requests, effects",
)
CONVERSATION: Operation[HeinzelRef, api.Conversation] = Operation(
    "heinzel.conversation",
    HeinzelRef,
    "Conversation",
    "conversation",
    False,
    "The messages sent to a heinzel and the turns they reached",
)
DIFF: Operation[DraftKey, api.DraftDiff] = Operation(
    "draft.diff", DraftKey, "DraftDiff", "draft_diff", False, "A draft's diff"
)
REVIEW: Operation[DraftKey, api.DraftReview] = Operation(
    "draft.review",
    DraftKey,
    "DraftReview",
    "draft_review",
    False,
    "A draft with its text as placed and the section's last approved text",
)
TICK: Operation[Empty, api.TickReport] = Operation(
    "tick", Empty, "TickReport", "tick_once", True, "Wake what is due, once"
)
DRAFTS: Operation[Empty, api.DraftList] = Operation(
    "drafts", Empty, "DraftList", "drafts", False, "Drafts waiting for review"
)
SPEND: Operation[Empty, api.SpendToday] = Operation(
    "costs.today", Empty, "SpendToday", "spend_today", False, "Spent today against the cap"
)

REPORT: Operation[ReportRequest, api.Decision] = Operation(
    "heinzel.report", ReportRequest, "Decision", "report", True, "Add a line to the action log"
)
ACTIONS: Operation[ActionsRequest, api.ActionLog] = Operation(
    "heinzel.actions", ActionsRequest, "ActionLog", "actions", False, "The action log"
)
GRAPH: Operation[GraphRequest, api.Graph] = Operation(
    "graph", GraphRequest, "Graph", "graph", False, "Who reads and writes what"
)
TEAM_STATUS: Operation[Empty, api.TeamStatus] = Operation(
    "team.status", Empty, "TeamStatus", "team_status", False,
    "Who holds each team heinzel's lease, until when, and receipts waiting to be pushed",
)  # fmt: skip
TEAM_LOG: Operation[Empty, api.TeamLog] = Operation(
    "team.log", Empty, "TeamLog", "team_log", False, "The team's receipts on hz/state"
)

OPERATIONS: dict[str, Operation[Any, Any]] = {
    op.name: op
    for op in (
        LIST, SHOW, CONTRACT, VERIFY, REINDEX, PRUNE, NEW, TEMPLATES, IMPORT, APPROVE, REJECT,
        AMEND, PAUSE, UNPAUSE, RETIRE, UNRETIRE, RENAME, WAKE, RESUME, DRAFTS, TICK, CHAT, INBOX,
        STOP, RETRY, ANSWER, DISMISS, FORGET, DIFF, REVIEW, TURN_BODY, SPEND, COMPOSER,
        COMPOSER_SAVE, COMPOSER_SENT, TRANSCRIPT, CONVERSATION, DOCTOR, GRAPH,
        REPORT, ACTIONS, TEAM_STATUS, TEAM_LOG,
    )
}  # fmt: skip
