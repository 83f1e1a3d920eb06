"""The typed shapes every head shares: what the kernel answers, on any wire.

The CLI, the cockpit and the daemon's HTTP routes all speak these models,
so a field can't exist on one side only. They carry no file paths a client
would need to open: a client reads what it is given.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.operations import CHAT_MESSAGE_MAX_CHARS as CHAT_MESSAGE_MAX_CHARS
from hz_kernel.operations import COMPOSER_TEXT_MAX_BYTES as COMPOSER_TEXT_MAX_BYTES
from hz_kernel.operations import ComposerOutgoing as ComposerOutgoing
from hz_kernel.overview import HeinzelFailure as HeinzelFailure
from hz_kernel.overview import HeinzelList as HeinzelList
from hz_kernel.overview import HeinzelSummary as HeinzelSummary
from hz_kernel.overview import KernelLoad as KernelLoad
from hz_kernel.overview import KernelStatus as KernelStatus
from hz_kernel.overview import SpendToday as SpendToday
from hz_kernel.overview import State as State
from hz_kernel.overview import TeamView as TeamView
from hz_kernel.overview import TickStatus as TickStatus
from hz_kernel.overview import TurnActivity as TurnActivity
from hz_kernel.tick.report import TickDeferred as TickDeferred
from hz_kernel.tick.report import TickProblem as TickProblem
from hz_kernel.tick.report import TickReport as TickReport
from hz_kernel.tick.report import TickSkipped as TickSkipped
from hz_kernel.tick.report import TickWoken as TickWoken


class _Shape(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")


class TurnSummary(_Shape):
    turn: str
    seq: int
    started_at: str
    cause: str | None = None
    causes: list[str] = []
    keys: list[str] = []
    contract_version: int | None = None
    status: str
    step: str | None = None
    attempt: int = 0
    disposition: str | None = None
    reason: str | None = None
    holder: str | None = None
    """``held-by``: the roster handle of the home that holds the lease."""
    report: str | None = None
    usd: float = 0.0
    tokens: int = 0
    tokens_cached: int = 0
    duration_ms: int = 0
    finished_at: str | None = None
    parent_turn: str | None = None
    body_present: bool = True


class DraftSummary(_Shape):
    heinzel: str
    heinzel_name: str | None = None
    key: str
    asset: str | None = None
    output: str | None = None
    contract_version: int | None = None
    placed_at: str | None = None
    status: str
    turn: str | None = None
    share_changed: float | None = None


class LessonSummary(_Shape):
    lesson_id: str
    lesson: str
    recorded_at: str | None = None
    dismissed: bool = False
    from_key: str | None = None


class AmendmentSummary(_Shape):
    proposal: str
    by: str | None = None
    status: str
    widens: list[str] = []
    reason: str | None = None
    proposed_at: str | None = None
    version: int | None = None


class ContractProposal(_Shape):
    """A contract text waiting for the user: a new heinzel's first, or an amendment."""

    proposal: str
    by: str
    first: bool
    """True for a proposed heinzel's first contract; False for an amendment."""
    text: str
    diff: str | None = None
    """From the current version to this text (None for a first contract)."""
    widens: list[str] = []
    narrows: list[str] = []
    reason: str | None = None

    @property
    def short_key(self) -> str:
        """What names this text after ``NAME@`` in ``hz approve|reject``."""
        return proposal_short_key(self.proposal, first=self.first)


def proposal_short_key(proposal: str, *, first: bool) -> str:
    """The short key of a waiting contract text: ``contract:v1`` or ``amendment:<proposal>``."""
    return "contract:v1" if first else f"amendment:{proposal}"


class ContractView(_Shape):
    """One heinzel's contract: its versions, one version's text, a diff, what waits."""

    heinzel: str
    name: str
    versions: list[int] = []
    version: int | None = None
    text: str | None = None
    against: int | None = None
    diff: str | None = None
    """From version ``against`` to ``version``, when there is an earlier one."""
    pending: ContractProposal | None = None


class QuestionSummary(_Shape):
    key: str
    question: str | None = None
    status: str
    asked_at: str | None = None


class ChainProblem(_Shape):
    code: str = "HZS033"
    seq: int | None
    offset: int
    problem: str
    detail: str
    accepted: bool = False


class VerifyReport(_Shape):
    """What ``hz heinzel verify`` found for one spine."""

    id: str
    name: str
    ok: bool
    events: int
    bytes: int
    last_seq: int
    problems: list[ChainProblem] = []
    torn_tail_bytes: int = 0
    accepted_now: bool = False


class VerifyList(_Shape):
    items: list[VerifyReport]


class DoctorCheck(_Shape):
    """What ``hz doctor`` found for one model string: configured, and answering?"""

    model: str
    used_by: list[str] = []
    """The heinzels whose turns use it now (empty: the home's default, or asked for)."""
    ok: bool
    priced: bool = True
    code: str | None = None
    problem: str | None = None
    hint: str = ""
    note: str = ""
    seconds: float | None = None
    """How long the check's question took, when the model was asked."""
    tokens: int | None = None


class DoctorReport(_Shape):
    items: list[DoctorCheck]


class CostByCause(_Shape):
    total: float
    by_cause: dict[str, float]


class TurnCaps(_Shape):
    """What caps one turn of a heinzel: its model's price (if known), dollars and tokens."""

    model: str
    priced: bool
    """False when the model has no known price (Ollama, an OpenAI-compatible server, a
    model the price table lacks): its turns' cost is unknown and only tokens cap them."""
    max_usd: float
    max_tokens: int
    tokens_month: int = 0
    """Tokens this heinzel's turns used this month (what an unpriced model's cost is in)."""


class Notice(_Shape):
    """A notice a heinzel's spine holds (``notice.raised``), as the index keeps it."""

    heinzel: str
    key: str
    notice: str
    ts: datetime | str


#: How many notices ``hz heinzel show`` carries.
NOTICES_SHOWN = 10


class HeinzelDetail(_Shape):
    """Everything ``hz heinzel show`` and the cockpit's heinzel page need."""

    heinzel: HeinzelSummary
    contract_versions: list[int] = []
    inputs: dict[str, Any] = {}
    turns: list[TurnSummary] = []
    drafts: list[DraftSummary] = []
    lessons: list[LessonSummary] = []
    amendments: list[AmendmentSummary] = []
    questions: list[QuestionSummary] = []
    notices: list[Notice] = []
    """The newest notices raised on this heinzel (a daily cap, a reader's deadline), newest
    first, at most ``NOTICES_SHOWN``."""
    pending_requests: int = 0
    inbox_skipped: list[str] = []
    """Inbox entries skipped as no regular files (HZS090) or damaged (HZS031), one line each."""
    cost_month: CostByCause = Field(default_factory=lambda: CostByCause(total=0.0, by_cause={}))
    caps: TurnCaps | None = None
    model: str | None = None
    """The model this heinzel's turns use: its contract's ``agent.model``, else the home's."""
    model_from: Literal["contract", "home"] | None = None
    """Where ``model`` comes from: the contract, or the home's ``[model] default``."""


class NewHeinzel(_Shape):
    """A heinzel just created: ``proposed``, its contract shown for approval."""

    id: str
    name: str
    state: State
    proposal: str
    contract: str
    fingerprint: str
    warnings: list[str] = []
    """One coded line per thing a team heinzel lacks to be placed (a handle, a repository):
    it is created all the same, and runs once ``[team]`` is set."""


class Decision(_Shape):
    """What an approve, reject, pause, retire or rename did."""

    heinzel: str
    what: str
    state: str
    version: int | None = None
    declined: bool = False
    already: Literal["approved", "superseded"] | None = None
    """An approve of a draft already decided that way (or replaced by a newer draft): nothing
    changed. Approving twice is safe, and the answer says so."""
    warnings: list[str] = []
    """For an approved contract: one coded line per thing a team heinzel lacks to be placed."""


class Amendment(_Shape):
    heinzel: str
    proposal: str
    by: str
    widens: list[str] = []
    narrows: list[str] = []


class TemplateParameter(_Shape):
    name: str
    default: str
    help: str
    optional: bool = False
    """May be given empty (it then means what its help says)."""


class TemplateSummary(_Shape):
    name: str
    description: str
    parameters: list[str] = []
    details: list[TemplateParameter] = []
    """The parameters with their defaults and help, in the same order."""


class TemplateList(_Shape):
    items: list[TemplateSummary]


class ImportReport(_Shape):
    created: list[str] = []
    unchanged: list[str] = []
    conflicts: list[str] = []


class TurnReport(_Shape):
    """How a turn ended (or that none ran)."""

    heinzel: str
    turn: str | None
    status: str
    cause: str | None = None
    disposition: str | None = None
    reason: str | None = None
    report: str | None = None
    usd: float = 0.0
    tokens: int = 0
    handed_back: list[InboxItem] = []
    """A stop with ``hand_back``: the chat messages it withdrew from the inbox, oldest first;
    no turn gets them, they are the user's to send again."""


class Admitted(_Shape):
    """A message on disk in the inbox, and what became of it so far."""

    request_id: str
    heinzel: str
    mode: str
    status: str
    turn: str | None = None


class InboxItem(_Shape):
    request_id: str
    kind: str
    mode: str
    message: str
    admitted_at: datetime
    status: str


class InboxList(_Shape):
    items: list[InboxItem]
    skipped: list[str] = []
    """Entries skipped as no regular files (HZS090, one line each), as ``Conversation`` says."""


class ComposerText(_Shape):
    """A heinzel's unsent message as every window shares it (``composer.get``).

    ``revision`` counts the saves; a window saves over the revision it last
    saw or not at all (``composer.save``). ``window`` names the window that
    wrote this revision, so a window recognises its own save.
    """

    heinzel: str = ""
    revision: int = 0
    text: str = ""
    mode: Literal["steer", "queue"] = "queue"
    outgoing: ComposerOutgoing | None = None
    history: list[str] = []
    """Messages sent from the composer, oldest first (↑/↓ walk them)."""
    window: str | None = None


class ComposerSaved(_Shape):
    """``composer.save``: whether it was written, and the composer as it now stands.

    Not saved means another window saved a newer revision first: ``current``
    is that one, for the window to take or to resolve against its own text.
    """

    saved: bool
    current: ComposerText


class DraftDiff(_Shape):
    """A draft as placed beside the document's current text, for review."""

    key: str
    heinzel: str
    heinzel_name: str
    asset: str
    path: str
    status: str
    placed_text: str
    current_text: str


class DraftReview(DraftDiff):
    """A draft with what a reviewer compares it to: the section's last approved text too.

    ``approved_text`` is the text the user last approved in this section
    (None: nothing approved there before, or that approval's turn body was
    pruned: ``approved_note`` says which); ``line`` is the 1-based line of the
    draft's first text line in the document, for ``$EDITOR +LINE``.
    """

    approved_text: str | None = None
    approved_key: str | None = None
    approved_at: str | None = None
    approved_note: str | None = None
    line: int | None = None


class DraftList(_Shape):
    items: list[DraftSummary]


class PruneReport(_Shape):
    bodies_removed: int
    requests_removed: int
    sources_removed: int = 0
    bytes_freed: int


class ReindexReport(_Shape):
    heinzels: int
    events: int
    seconds: float
    damaged: list[str] = []


class TurnBody(_Shape):
    """One turn as a late reader catches up on it: its spine events and its body from an offset.

    ``turn`` is None when the heinzel has run no turn yet. ``records`` are the
    body's whole records after the offset asked for (only the types asked
    for), ``offset`` where the next read starts, ``more`` whether a page limit
    stopped it; ``present`` is False once the body is gone (pruned).
    ``refused``: something that is not a regular file (a FIFO, a directory)
    stands where the body goes; the store's one coded line, never read.
    """

    heinzel: str
    turn: str | None = None
    events: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    offset: int = 0
    more: bool = False
    present: bool = False
    refused: str | None = None


class TranscriptSummary(_Shape):
    """The summary in effect when a turn began: it stood in for the history it covers."""

    seq: int
    turn: str | None = None
    written_at: str
    covers_through_seq: int


class TurnTranscript(TurnBody):
    """One turn whole, for reading back: its spine events, its body, and the spine's context.

    Beside ``TurnBody``'s fields: the lessons active at the turn's pinned
    lessons seq and the summary in effect when it began (both from the
    spine, so an expired body still shows them), and ``expired``: the turn
    wrote a body that is gone now (pruned).
    """

    name: str = ""
    lessons: list[LessonSummary] = []
    summary: TranscriptSummary | None = None
    expired: bool = False
    cut_at_line: int | None = None
    """A finished turn's body ends early (a torn line, or shorter than written): where."""
    altered: bool = False
    """A finished turn's body whose bytes no longer hash to what ``turn.finished`` recorded:
    it was changed after the turn ended, so it may not be what the model saw."""


class ConversationMessage(_Shape):
    """One message the user sent a heinzel, and where it went.

    ``route``: ``steered`` (delivered into a running turn's think),
    ``queued`` (a turn's cause: it started one, or waited for the turn
    running then to end), ``answered`` (an answer to the heinzel's
    question), ``waiting`` (not delivered yet). ``turn`` is the turn it
    reached; ``turn_ended`` how that turn ended once it has (its
    disposition, or ``stopped`` when the user stopped it).
    """

    request_id: str
    kind: str
    mode: str
    message: str
    admitted_at: datetime
    route: Literal["steered", "queued", "answered", "waiting"]
    turn: str | None = None
    turn_ended: str | None = None


class Conversation(_Shape):
    """A heinzel's messages; ``skipped`` says (HZS090) which inbox entries were no files."""

    heinzel: str
    name: str
    items: list[ConversationMessage] = []
    skipped: list[str] = []


GRAPH_SCHEMA = 2
"""The version of ``hz graph --json``'s shape; it changes only when a field changes meaning."""


class GraphNode(_Shape):
    """A heinzel, a source it reads or an asset it writes or reads.

    ``id`` is ``heinzel:<name>``, ``source:<ref>`` or ``asset:<ref>``; a
    source's ref names what is fetched (``git:/repo``, ``files:notes/*.md``,
    ``http:https://…``), an asset's is its ``doc:`` ref.
    """

    id: str
    kind: Literal["heinzel", "source", "asset"]
    label: str
    heinzel: str | None = None
    """A heinzel node's id (``hz-…``) on this home."""
    team_id: str | None = None
    """A team heinzel's id on ``hz/state`` (the same on every home)."""
    readable: bool | None = None
    """An asset's: whether this home can read the document (else it is a name only)."""


class GraphEdge(_Shape):
    """One relation, with where it is known from: the contract says so (``declared``), the
    spine shows it happened (``observed``), or both.

    ``relation``: ``reads`` (heinzel → source or asset), ``writes`` (heinzel →
    asset), ``depends_on`` (heinzel → the heinzel whose output or asset it reads;
    ``via`` names that asset or output). ``turns`` counts the turns that read
    it, or the drafts placed; ``last_turn`` is the newest of them;
    ``team_turns`` counts those known only from the team state's receipts
    (turns another home ran).
    """

    source: str
    target: str
    relation: Literal["reads", "writes", "depends_on"]
    declared: bool
    observed: bool
    turns: int = 0
    last_turn: str | None = None
    via: str | None = None
    team_turns: int = 0


class Graph(_Shape):
    """``hz graph``: who reads and writes what, declared and observed apart (``docs/graph.md``)."""

    schema_version: int = GRAPH_SCHEMA
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []


class ActionEntry(_Shape):
    """One entry of a heinzel's action log (``hz heinzel actions``).

    ``what``: ``read`` (a turn's gather read an input: its ``name``, the
    ``ref`` of what it reads and the content's ``fingerprint``), ``wrote`` (a
    draft placed: the asset ``ref`` and the draft's hash as ``fingerprint``),
    ``handed_off`` (a task handed to a coding agent: the runner as ``name``,
    its report's hash as ``fingerprint``, the transcript's hash, how it
    exited and what it cost, or ``interrupted`` when it was cut short; never
    the task or the report) or ``reported`` (a
    ``line`` the model's ``report`` tool or the user wrote). ``by`` is ``hz``
    for what hz recorded itself. The command line's ``--json`` and the MCP
    tool both answer with this model (inside ``ActionLog``).
    """

    seq: int
    at: str
    turn: str | None = None
    what: Literal["read", "wrote", "handed_off", "reported"]
    by: Literal["hz", "model", "user"]
    name: str | None = None
    ref: str | None = None
    fingerprint: str | None = None
    line: str | None = None
    transcript_hash: str | None = None
    exit_status: int | None = None
    usd: float | None = None
    """A handoff's cost, when its runner reported one."""
    tokens: int | None = None
    interrupted: bool = False
    """A handoff a stop, a drain or a crash cut short: no exit status, report or cost."""


class ActionLog(_Shape):
    """A heinzel's action log, oldest first: the newest ``limit`` entries."""

    heinzel: str
    name: str
    items: list[ActionEntry] = []


class TeamLeaseRow(_Shape):
    """One team heinzel's lease as the team repository holds it (``hz team status``)."""

    name: str
    heinzel: str
    team_id: str
    repo: str
    role: Literal["owner", "delegate"]
    holder: str | None = None
    expires: str | None = None
    token: int | None = None
    held_here: bool = False
    free: Literal["expired", "released"] | None = None
    """The lease no longer holds: it ran out, or its holder handed it back at ``expires``."""
    error: str | None = None
    """Why the remote could not be read (the lease shown is the one seen last)."""


class TeamStatus(_Shape):
    handle: str | None = None
    leases: list[TeamLeaseRow] = []
    pending: dict[str, int] = {}
    """Per team repository: receipts queued in the outbox, not yet on ``hz/state``."""
    problems: list[str] = []


class TeamReceipt(_Shape):
    """A receipt on ``hz/state``; ``name`` is the heinzel's here, if this home has it."""

    name: str | None = None
    repo: str
    receipt: dict[str, Any]


class TeamLog(_Shape):
    receipts: list[TeamReceipt] = []
    errors: list[str] = []
