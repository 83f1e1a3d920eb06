"""The operations table: every command of the kernel as a request and a response model.

This table is the single source of the kernel's interface. The in-process
client dispatches on it, the daemon builds its routes from it and the HTTP
client its calls, so no command can exist on one side of the wire only.
Each operation names the ``Kernel`` method that serves it; the request's
fields are that method's keyword arguments.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel import overview

if TYPE_CHECKING:
    from hz_kernel import api
    from hz_kernel.op_requests import CHAT_MESSAGE_MAX_CHARS as CHAT_MESSAGE_MAX_CHARS
    from hz_kernel.op_requests import COMPOSER_TEXT_MAX_BYTES as COMPOSER_TEXT_MAX_BYTES
    from hz_kernel.op_requests import (
        ActionsRequest,
        AmendRequest,
        AnswerRequest,
        ApproveRequest,
        ChatRequest,
        ComposerSaveRequest,
        ComposerSentRequest,
        ContractRequest,
        DismissRequest,
        DoctorRequest,
        DraftKey,
        Empty,
        ForgetRequest,
        GraphRequest,
        HeinzelRef,
        ImportRequest,
        NewRequest,
        RejectRequest,
        RenameRequest,
        ReportRequest,
        RetryRequest,
        StopRequest,
        TranscriptRequest,
        TurnBodyRequest,
        VerifyRequest,
        WakeRequest,
    )
    from hz_kernel.op_requests import ComposerOutgoing as ComposerOutgoing
    from hz_kernel.op_requests import json_bytes as json_bytes

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)


#: The most heinzel ids one ``heinzel.list`` may name; more are listed whole.
MAX_LISTED_IDS = 1000

#: The module of every request model but ``ListRequest``, beside this one.
REQUESTS = "op_requests.py"


def __getattr__(name: str) -> Any:
    """The request models (and their limits) of ``hz_kernel.op_requests``, as this module's;
    a dunder (``from hz_kernel.operations import ...`` asks for ``__path__``) loads nothing."""
    if not name.startswith("__"):
        with contextlib.suppress(AttributeError):
            return getattr(importlib.import_module("hz_kernel.op_requests"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Request(BaseModel):
    """A request's fields are its operation's arguments; a field's docstring says what it is
    (``docstring``), else ``ARGUMENTS`` does, by its name."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


#: What the arguments that many operations share mean, for a field without a docstring.
ARGUMENTS = {
    "ref": "a heinzel's name or id",
    "key": "a draft's key, as drafts lists it",
    "request_id": "an id of your own (1-64 letters, digits, - or _): a call retried with the "
    "same id is carried out once",
    "message": "the message's text",
    "mode": "steer (into the running turn) or queue (the next turn)",
    "line": "one line of at most 300 characters",
    "text": "a contract's whole text (YAML front matter and prose)",
    "reason": "why, in a few words; the heinzel learns from it",
    "name": "the new name",
    "state": "only heinzels in this state (proposed, asleep, awake, waiting, paused, retired)",
    "artifact": "only heinzels that write this asset (doc:path#anchor)",
    "contract": "only heinzels under this contract (NAME or NAME:VERSION)",
    "where": "only heinzels whose contract has these hz keys with these values",
    "accept": "accept the break found, once you have looked at it, so writes resume",
    "template": "a template's name, as heinzel_templates lists them",
    "sentence": "what the heinzel should do, in a sentence",
    "params": "the template's parameters (or the sentence's), by name",
    "source": "where the contract came from (kept with the version)",
    "path": "a folder on this machine",
    "approver": "who approves: owner, or a roster handle",
    "hint": "a hint for the model on this try",
    "lesson_id": "the lesson's id, as heinzel_show lists them",
    "turn": "a turn's id (a ULID, as heinzel_show lists them)",
    "limit": "at most this many, the newest",
}


def describe(operation: Operation[Any, Any]) -> str:
    """What an operation does, takes and answers, in words, from the table: an MCP tool's
    description, for an agent that has only this to go by."""
    request = operation.request
    request.model_rebuild()
    arguments = [
        f"{name}{' (required)' if field.is_required() else ''}: {meaning(request, name)}"
        for name, field in request.model_fields.items()
    ]
    takes = "; ".join(arguments) if arguments else "none"
    return f"{operation.summary}. Arguments: {takes}. Returns {operation.returns}."


def meaning(request: type[Request], name: str) -> str:
    """What argument ``name`` of ``request`` is, in plain words (the MCP input schema's
    description of it too): its docstring, else ``ARGUMENTS`` by its name."""
    said = docstring(request, name)
    return _plain(said) if said else ARGUMENTS.get(name, name)


def docstring(request: type[Request], name: str) -> str | None:
    """The docstring under field ``name`` of ``request``, if it has one.

    Read from the source of the requests' modules when first asked (for an MCP tool), not at
    import:
    pydantic's ``use_attribute_docstrings`` parsed the source for each request class as it
    was built, the most costly part of importing this module, which every ``hz`` does.
    """
    return _field_docstrings().get(request.__name__, {}).get(name)


@functools.cache
def _field_docstrings() -> dict[str, dict[str, str]]:
    """Class name -> field -> the string literal right under the field, as pydantic reads it."""
    found: dict[str, dict[str, str]] = {}
    here = Path(__file__)
    try:
        sources = [path.read_text(encoding="utf-8") for path in (here, here.with_name(REQUESTS))]
    except OSError:  # installed without sources: the arguments' shared meanings still hold
        return found
    for node in (node for source in sources for node in ast.parse(source).body):
        if not isinstance(node, ast.ClassDef):
            continue
        found[node.name] = {
            field.target.id: inspect.cleandoc(under.value.value)
            for field, under in itertools.pairwise(node.body)
            if isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(under, ast.Expr)
            and isinstance(under.value, ast.Constant)
            and isinstance(under.value.value, str)
        }
    return found


def _plain(docstring: str) -> str:
    """A field's docstring as an argument's meaning: no markup, no closing full stop, and
    ``None`` (how the code says it) as an agent leaves it: omitted."""
    plain = docstring.replace("``", "").replace("None:", "omitted:").rstrip(".")
    return plain[:1].lower() + plain[1:]


@dataclass(frozen=True)
class Operation(Generic[Req, Resp]):
    """One command: its wire name, shapes, the kernel method and whether it changes state."""

    name: str
    asks: str
    """The name of its request model: ``ListRequest`` here, the others in
    ``hz_kernel.requests``, created on first use (a listing creates none of them)."""
    answer: str
    """The name of its response model in ``hz_kernel.api``, looked up on first use: importing
    the table (a cockpit's start does) does not create every answer model, and answering
    with a shape of ``hz_kernel.overview`` (a listing) creates none of the others."""
    handler: str
    writes: bool
    summary: str
    """What it does, in a sentence or two: the MCP tool's description begins with it."""
    returns: str
    """What it answers with, in words (the response model is the schema)."""
    cockpit_only: bool = False
    """Serves the cockpit's own windows (its composer), not a person or an agent: on the
    wire, but no MCP tool."""

    @property
    def request(self) -> type[Req]:
        return cast("type[Req]", getattr(sys.modules[__name__], self.asks))

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


class ListRequest(Request):
    state: str | None = None
    artifact: str | None = None
    contract: str | None = None
    where: dict[str, str] | None = None
    ids: list[str] | None = Field(default=None, max_length=MAX_LISTED_IDS)
    """Only these heinzels (a client refreshing rows whose spines moved)."""


LIST: Operation[ListRequest, api.HeinzelList] = Operation(
    "heinzel.list", "ListRequest", "HeinzelList", "list_heinzels", False,
    "List the heinzels of this home from the index, optionally filtered by state, the asset "
    "they write, their contract or a contract key",
    returns="the heinzels, one row each: id, name, state, assets, schedule, next due and "
    "last turn",
)  # fmt: skip
SHOW: Operation[HeinzelRef, api.HeinzelDetail] = Operation(
    "heinzel.show", "HeinzelRef", "HeinzelDetail", "show", False,
    "Show one heinzel: its state, contract version, recent turns, drafts waiting, open "
    "question, lessons and newest notices",
    returns="everything about the heinzel that hz heinzel show prints",
)  # fmt: skip
VERIFY: Operation[VerifyRequest, api.VerifyList] = Operation(
    "heinzel.verify", "VerifyRequest", "VerifyList", "verify", True,
    "Check the hash chain of one heinzel's spine (or every spine), and with accept=true accept "
    "a break you have looked at so writes resume",
    returns="one row per spine checked: ok, or where and how its chain breaks",
)  # fmt: skip
DOCTOR: Operation[DoctorRequest, api.DoctorReport] = Operation(
    "doctor", "DoctorRequest", "DoctorReport", "doctor", False,
    "Check the models the home's turns use: configured, and (ask=true) answering a tiny "
    "question",
    returns="one row per model: whether it is configured and answered, with a coded line if "
    "not",
)  # fmt: skip
REINDEX: Operation[Empty, api.ReindexReport] = Operation(
    "heinzel.reindex", "Empty", "ReindexReport", "reindex", True,
    "Rebuild the home's index from the spines (the spines are the truth; the index is a cache)",
    returns="how many heinzels and events were indexed, and any damaged spine",
)  # fmt: skip
PRUNE: Operation[Empty, api.PruneReport] = Operation(
    "heinzel.prune", "Empty", "PruneReport", "prune", True,
    "Delete turn bodies, delivered requests and cached sources past their retention; the "
    "spines keep their hashes",
    returns="how many bodies, requests and cached sources were removed, and the bytes freed",
)  # fmt: skip

NEW: Operation[NewRequest, api.NewHeinzel] = Operation(
    "heinzel.new", "NewRequest", "NewHeinzel", "new", True,
    "Create a heinzel from exactly one of: a contract's text, a template name with params, or "
    "a sentence saying what it should do. It starts proposed: approve it to let it run",
    returns="the new heinzel's id, name, state and compiled contract, for review, and warnings "
    "(a team heinzel this home cannot place yet)",
)  # fmt: skip
CONTRACT: Operation[ContractRequest, api.ContractView] = Operation(
    "heinzel.contract", "ContractRequest", "ContractView", "contract", False,
    "Show a heinzel's contract: its versions, one version's text, a diff between two versions, "
    "and any proposal waiting for approval",
    returns="the versions, the chosen version's text, the diff and the waiting proposal",
)  # fmt: skip
TEMPLATES: Operation[Empty, api.TemplateList] = Operation(
    "heinzel.templates", "Empty", "TemplateList", "templates", False,
    "List the built-in contract templates heinzel_new accepts, with the params each takes",
    returns="the templates with their descriptions and params",
)  # fmt: skip
IMPORT: Operation[ImportRequest, api.ImportReport] = Operation(
    "heinzel.import", "ImportRequest", "ImportReport", "import_dir", True,
    "Create a heinzel (at contract version 1) from every *.prose.md contract file in a folder "
    "on this machine",
    returns="the heinzels created, those unchanged and any conflicts",
)  # fmt: skip
APPROVE: Operation[ApproveRequest, api.Decision] = Operation(
    "approve", "ApproveRequest", "Decision", "approve", True,
    "Approve a draft (ref is its key, as drafts lists it), or a heinzel's proposed contract "
    "(ref is the heinzel's name or id)",
    returns="what was decided and the heinzel's state now, and warnings (a team heinzel this "
    "home cannot place yet)",
)  # fmt: skip
REJECT: Operation[RejectRequest, api.Decision] = Operation(
    "reject", "RejectRequest", "Decision", "reject", True,
    "Reject a draft (ref is its key) or decline a heinzel's proposed contract (ref is the "
    "heinzel), with an optional reason: a draft's may become a writing lesson, an "
    "amendment's is kept in the heinzel's history",
    returns="what was decided and the heinzel's state now",
)  # fmt: skip
AMEND: Operation[AmendRequest, api.Amendment] = Operation(
    "heinzel.amend", "AmendRequest", "Amendment", "amend", True,
    "Propose a new version of a heinzel's contract (the whole contract text); it waits for "
    "approval",
    returns="the proposal and how it differs from the current version",
)  # fmt: skip
PAUSE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.pause", "HeinzelRef", "Decision", "pause", True,
    "Pause a heinzel: it runs no turns until unpaused",
    returns="the heinzel's state now",
)  # fmt: skip
UNPAUSE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.unpause", "HeinzelRef", "Decision", "unpause", True,
    "Unpause a paused heinzel so its schedule and triggers wake it again",
    returns="the heinzel's state now",
)  # fmt: skip
RETIRE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.retire", "HeinzelRef", "Decision", "retire", True,
    "Retire a heinzel: it runs no more turns; its spine is kept and heinzel_unretire brings it "
    "back",
    returns="the heinzel's state now",
)  # fmt: skip
UNRETIRE: Operation[HeinzelRef, api.Decision] = Operation(
    "heinzel.unretire", "HeinzelRef", "Decision", "unretire", True,
    "Bring a retired heinzel back, asleep",
    returns="the heinzel's state now",
)  # fmt: skip
RENAME: Operation[RenameRequest, api.Decision] = Operation(
    "heinzel.rename", "RenameRequest", "Decision", "rename", True,
    "Rename a heinzel (its id stays)",
    returns="the heinzel's state now",
)  # fmt: skip

WAKE: Operation[WakeRequest, api.TurnReport] = Operation(
    "heinzel.wake", "WakeRequest", "TurnReport", "wake", True,
    "Run a turn of a heinzel now (cause asked). A heinzel another process holds gets the wake "
    "queued",
    returns="how the turn ended (disposition, report line, cost), or that it was queued or "
    "is waiting",
)  # fmt: skip
RESUME: Operation[HeinzelRef, api.TurnReport] = Operation(
    "heinzel.resume", "HeinzelRef", "TurnReport", "resume", True,
    "Continue a heinzel's turn that a crash cut short or that is parked waiting",
    returns="how the turn ended",
)  # fmt: skip
CHAT: Operation[ChatRequest, api.Admitted] = Operation(
    "heinzel.chat", "ChatRequest", "Admitted", "chat", True,
    "Send a message to a heinzel: it steers a running turn (mode steer) or becomes the next "
    "turn (mode queue). A heinzel another process holds gets it queued",
    returns="the message's request id and what became of it: delivered, pending or queued",
)  # fmt: skip
INBOX: Operation[HeinzelRef, api.InboxList] = Operation(
    "heinzel.inbox", "HeinzelRef", "InboxList", "inbox", False,
    "List a heinzel's inbox: the messages and requests not yet delivered to a turn",
    returns="the waiting requests",
)  # fmt: skip
STOP: Operation[StopRequest, api.TurnReport] = Operation(
    "heinzel.stop", "StopRequest", "TurnReport", "stop", True,
    "Stop a heinzel's running turn (and any coding agent it handed a task to)",
    returns="how the turn ended, and with hand_back the messages it left unsent",
)  # fmt: skip
RETRY: Operation[RetryRequest, api.TurnReport] = Operation(
    "heinzel.retry", "RetryRequest", "TurnReport", "retry", True,
    "Run a failed or abandoned turn again, with an optional hint for the model",
    returns="how the new turn ended",
)  # fmt: skip
ANSWER: Operation[AnswerRequest, api.TurnReport] = Operation(
    "heinzel.answer", "AnswerRequest", "TurnReport", "answer", True,
    "Answer the question a heinzel's turn asked; the turn goes on with the answer",
    returns="how the turn ended",
)  # fmt: skip
DISMISS: Operation[DismissRequest, api.Decision] = Operation(
    "heinzel.dismiss", "DismissRequest", "Decision", "dismiss", True,
    "Dismiss one of a heinzel's lessons (by its id, as heinzel_show lists them) so turns no "
    "longer read it",
    returns="the heinzel's state now",
)  # fmt: skip
FORGET: Operation[ForgetRequest, api.Decision] = Operation(
    "heinzel.forget", "ForgetRequest", "Decision", "forget", True,
    "Hide one of a heinzel's past turns from the model (optionally with a line it reads "
    "instead); the spine keeps the turn",
    returns="the heinzel's state now",
)  # fmt: skip
TURN_BODY: Operation[TurnBodyRequest, api.TurnBody] = Operation(
    "turn.body", "TurnBodyRequest", "TurnBody", "turn_body", False,
    "Read one turn's spine events and body records, from a byte offset on (to follow a live "
    "turn)",
    returns="the events, the body records and the offset to read on from",
)  # fmt: skip
COMPOSER: Operation[HeinzelRef, api.ComposerText] = Operation(
    "composer.get", "HeinzelRef", "ComposerText", "composer", False,
    "A heinzel's unsent message in the cockpit's composer",
    returns="the composer's text and revision",
    cockpit_only=True,
)  # fmt: skip
COMPOSER_SAVE: Operation[ComposerSaveRequest, api.ComposerSaved] = Operation(
    "composer.save", "ComposerSaveRequest", "ComposerSaved", "composer_save", True,
    "Keep the cockpit composer's unsent text, over the revision the window last saw",
    returns="whether it was saved, and the composer now",
    cockpit_only=True,
)  # fmt: skip
COMPOSER_SENT: Operation[ComposerSentRequest, api.ComposerText] = Operation(
    "composer.sent", "ComposerSentRequest", "ComposerText", "composer_sent", True,
    "Clear a composer message the inbox took, keeping it in the composer's history",
    returns="the composer now",
    cockpit_only=True,
)  # fmt: skip
TRANSCRIPT: Operation[TranscriptRequest, api.TurnTranscript] = Operation(
    "turn.transcript", "TranscriptRequest", "TurnTranscript", "turn_transcript", False,
    "Read one turn whole: cause, inputs, context, model requests and answers, tool calls, "
    "effects and outcome",
    returns="the turn's events, body and context",
)  # fmt: skip
CONVERSATION: Operation[HeinzelRef, api.Conversation] = Operation(
    "heinzel.conversation", "HeinzelRef", "Conversation", "conversation", False,
    "List the messages sent to a heinzel and the turns each reached",
    returns="the messages with their request ids and routes",
)  # fmt: skip
DIFF: Operation[DraftKey, api.DraftDiff] = Operation(
    "draft.diff", "DraftKey", "DraftDiff", "draft_diff", False,
    "Show a draft beside the document's current text",
    returns="the draft's text as placed and the document's current text",
)  # fmt: skip
REVIEW: Operation[DraftKey, api.DraftReview] = Operation(
    "draft.review", "DraftKey", "DraftReview", "draft_review", False,
    "Show a draft for review: its text as placed and the section's last approved text",
    returns="the draft's text, the approved text it would replace and its metadata",
)  # fmt: skip
TICK: Operation[Empty, api.TickReport] = Operation(
    "tick", "Empty", "TickReport", "tick_once", True,
    "Run the home's tick once: wake every heinzel whose schedule or trigger is due, deliver "
    "queued requests",
    returns="the heinzels woken, deferred and skipped, and any problems",
)  # fmt: skip
DRAFTS: Operation[Empty, api.DraftList] = Operation(
    "drafts", "Empty", "DraftList", "drafts", False,
    "List every draft waiting for review, across heinzels",
    returns="the drafts: key, heinzel, asset, status and when placed",
)  # fmt: skip
SPEND: Operation[Empty, api.SpendToday] = Operation(
    "costs.today", "Empty", "SpendToday", "spend_today", False,
    "Show what the home spent today (UTC) against its daily cap",
    returns="the day, the USD spent and the cap",
)  # fmt: skip

REPORT: Operation[ReportRequest, api.Decision] = Operation(
    "heinzel.report", "ReportRequest", "Decision", "report", True,
    "Add one line (at most 300 characters, no document text or e-mail address) to a heinzel's "
    "action log",
    returns="the heinzel's state now",
)  # fmt: skip
ACTIONS: Operation[ActionsRequest, api.ActionLog] = Operation(
    "heinzel.actions", "ActionsRequest", "ActionLog", "actions", False,
    "List a heinzel's action log: what its turns read and wrote, what they handed off, and the "
    "lines reported",
    returns="the entries, oldest first",
)  # fmt: skip
GRAPH: Operation[GraphRequest, api.Graph] = Operation(
    "graph", "GraphRequest", "Graph", "graph", False,
    "Show who reads and writes what: each heinzel's sources and documents, declared by its "
    "contract and observed in its turns, and which heinzels depend on which",
    returns="the graph as nodes (heinzels, sources, assets) and edges (reads, writes, "
    "depends_on, each declared and/or observed)",
)  # fmt: skip
TEAM_STATUS: Operation[Empty, api.TeamStatus] = Operation(
    "team.status", "Empty", "TeamStatus", "team_status", False,
    "Show who holds each team heinzel's lease, until when, and how many receipts wait to be "
    "pushed to the team repository",
    returns="one row per team heinzel, and the receipts waiting per repository",
)  # fmt: skip
TEAM_LOG: Operation[Empty, api.TeamLog] = Operation(
    "team.log", "Empty", "TeamLog", "team_log", False,
    "List the receipts on the team repository's hz/state branch (ids, hashes and costs; no "
    "text), oldest first",
    returns="the receipts and any error reaching the repositories",
)  # fmt: skip

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
