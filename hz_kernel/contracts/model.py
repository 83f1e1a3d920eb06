"""The typed, compiled form of a contract and the value types its ``hz:`` table is made of.

Every type here normalises as it validates (durations to one unit, cron to
single spaces, lists of capabilities sorted) so two texts that mean the same
compile to equal models, and so the intent fingerprint only moves when the
meaning does. Cross-field rules (an input needs its capability) live in
``compile.py``, because a stored compiled form must load even if later
versions of hz tighten them.
"""

from __future__ import annotations

import math
import posixpath
import re
from datetime import datetime
from difflib import get_close_matches
from typing import Annotated, Any, Literal

from cronsim import CronSim
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from hz_kernel.errors import HzError
from hz_kernel.terms import HANDLE

FORMAT_VERSION = 2
"""Version of the compiled form and of the fingerprint recipe; bumped only if either changes.

2: the fingerprint reads a schedule by its slots, not its spelling, and an
unset ``agent.model`` stays unset (the home's default) instead of ``local``.
Stored version-1 forms still load."""


class ContractError(HzError):
    """A contract that cannot be compiled, amended or stored; ``place`` is ``<source>:<line>``."""


class FrozenModel(BaseModel):
    """Immutable and strict about keys: a typo in a contract is an error, never ignored."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


def fail(code: str, message: str) -> PydanticCustomError:
    """A validation failure that carries its ``HZC`` code through pydantic to the compiler."""
    return PydanticCustomError(code, message)


def shown(value: object, limit: int = 60) -> str:
    """A value quoted for a message, cut so a huge value never floods a terminal."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CONTROL_OR_NEWLINE = re.compile(r"[\x00-\x1f\x7f]")


def _line_text(limit: int) -> AfterValidator:
    def check(value: str) -> str:
        if not value.strip():
            raise fail("HZC012", "must not be empty")
        if _CONTROL_OR_NEWLINE.search(value):
            raise fail("HZC012", "must be text on one line, without control characters")
        if len(value) > limit:
            raise fail("HZC012", f"is longer than {limit} characters")
        return value

    return AfterValidator(check)


def _multiline_text(value: str) -> str:
    if not value.strip():
        raise fail("HZC012", "must not be empty")
    if _CONTROL.search(value):
        raise fail("HZC012", "must not contain control characters")
    if len(value) > 4096:
        raise fail("HZC012", "is longer than 4096 characters")
    return value


LineText = Annotated[str, _line_text(1024)]
CommandText = Annotated[str, AfterValidator(_multiline_text)]

# --- names ----------------------------------------------------------------------------------

NAME_PATTERN = re.compile(r"[a-z][a-z0-9-]{1,62}")
KEY_NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,62}")


def _heinzel_name(value: str) -> str:
    if not NAME_PATTERN.fullmatch(value):
        raise fail(
            "HZC060",
            f"{shown(value)} is not a usable name: use 2 to 63 lower-case letters, digits "
            "and hyphens, starting with a letter (like weekly-report)",
        )
    return value


def _key_name(value: str) -> str:
    if not KEY_NAME_PATTERN.fullmatch(value):
        raise fail(
            "HZC063",
            f"{shown(value)} is not a usable input or output name: use lower-case letters, "
            "digits, '-' and '_', starting with a letter (like merged_prs)",
        )
    return value


HeinzelName = Annotated[str, AfterValidator(_heinzel_name)]
KeyName = Annotated[str, AfterValidator(_key_name)]
Namespace = Literal["me", "team"]

# --- durations ------------------------------------------------------------------------------

DURATION_UNITS: dict[str, int] = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_CANONICAL_UNITS = ("d", "h", "m", "s")
_DURATION_PART = re.compile(r"(\d{1,7})([wdhms])")
MAX_DURATION_SECONDS = 3650 * 86400


def duration_seconds(text: str) -> int:
    """Seconds in a duration like ``15m``, ``1h30m`` or ``7d``; ``ValueError`` if it is not one."""
    compact = text.strip().lower()
    if not compact or _DURATION_PART.sub("", compact):
        raise ValueError(text)
    return sum(int(n) * DURATION_UNITS[unit] for n, unit in _DURATION_PART.findall(compact))


def format_duration(seconds: int) -> str:
    """The canonical spelling: the largest unit that divides evenly (``90m``, ``1h``, ``7d``)."""
    for unit in _CANONICAL_UNITS:
        if seconds % DURATION_UNITS[unit] == 0:
            return f"{seconds // DURATION_UNITS[unit]}{unit}"
    raise AssertionError("seconds always divide")


def _duration(minimum_seconds: int) -> BeforeValidator:
    def normalise(value: Any) -> Any:
        if not isinstance(value, str):
            raise fail(
                "HZC021", f"expected a duration like '15m', '1h' or '7d', not {shown(value)}"
            )
        try:
            seconds = duration_seconds(value)
        except ValueError:
            raise fail(
                "HZC021",
                f"{shown(value)} is not a duration: write a number and a unit "
                "(s, m, h, d or w), like '15m', '1h30m' or '7d'",
            ) from None
        if seconds < minimum_seconds:
            least = format_duration(minimum_seconds)
            raise fail("HZC021", f"the duration {shown(value)} is shorter than {least}")
        if seconds > MAX_DURATION_SECONDS:
            raise fail("HZC021", f"the duration {shown(value)} is longer than ten years")
        if seconds % 60 and minimum_seconds >= 60:
            raise fail("HZC021", f"the duration {shown(value)} must be whole minutes")
        return format_duration(seconds)

    return BeforeValidator(normalise)


Duration = Annotated[str, _duration(60)]
"""Minute-granular duration, stored in canonical form (``90m``, ``1h``, ``7d``)."""


def _timeout_seconds(value: Any) -> Any:
    if isinstance(value, bool):
        raise fail("HZC021", f"expected a timeout like '30s' or a number of seconds, not {value}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = float(duration_seconds(value))
        except ValueError:
            raise fail(
                "HZC021", f"{shown(value)} is not a timeout: write seconds, like 30 or '30s'"
            ) from None
    else:
        raise fail("HZC021", f"expected a timeout like '30s', not {shown(value)}")
    if not math.isfinite(seconds) or not 0 < seconds <= 600:
        raise fail("HZC021", "a shell timeout is more than 0 and at most 600 seconds (10m)")
    return seconds


TimeoutSeconds = Annotated[float, BeforeValidator(_timeout_seconds)]

# --- schedules ------------------------------------------------------------------------------

SCHEDULE_PROBE_START = datetime(2024, 1, 1)


def _cron(value: str) -> str:
    fields = value.split()
    if len(fields) != 5 or len(value) > 200:
        raise fail(
            "HZC020",
            f"{shown(value)} is not a 5-field cron schedule (minute hour day month weekday), "
            "like '0 15 * * FRI'",
        )
    normalised = " ".join(fields).upper()
    try:
        next(CronSim(normalised, SCHEDULE_PROBE_START))
    except StopIteration:
        raise fail("HZC020", f"the schedule {shown(value)} never fires") from None
    except Exception as exc:  # cronsim raises several types on malformed fields
        raise fail("HZC020", f"{shown(value)} is not a valid cron schedule ({exc})") from None
    return normalised


CronExpr = Annotated[str, AfterValidator(_cron)]

# --- capabilities, assets, approvers, models ------------------------------------------------

CAPABILITIES: dict[str, str] = {
    "files:read": "read files and folders",
    "git:read": "read git history",
    "shell:run": "run shell commands",
    "http:read": "fetch web pages",
    "documents:read": "read document sections",
    "documents:write": "place drafts in documents",
    "chat:read": "read chat messages",
    "heinzels:read": "read other heinzels' approved outputs",
    "agents:handoff": "hand tasks to a configured coding agent runner",
}
"""Every capability a contract may require, with what it allows."""

PUBLISH_CAPABILITIES: dict[str, str] = {"documents.place_draft": "documents:write"}
"""Publish capabilities and the ``requires`` entry each needs."""


def _capability(value: str) -> str:
    if value not in CAPABILITIES:
        close = get_close_matches(value, CAPABILITIES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        known = ", ".join(CAPABILITIES)
        raise fail("HZC033", f"unknown capability {shown(value)}{hint}; known: {known}")
    return value


Capability = Annotated[str, AfterValidator(_capability)]

_ANCHOR = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")


def normalise_asset(value: str) -> str:
    """``doc:`` + a path without ``..`` + an optional ``#anchor`` slug, with the path tidied."""
    bad = fail(
        "HZC040",
        f"{shown(value)} is not an asset ref: write doc:PATH or doc:PATH#anchor, "
        "like doc:reports/weekly.md#checkout",
    )
    if not value.startswith("doc:") or len(value) > 1024:
        raise bad
    path, hashmark, anchor = value[4:].partition("#")
    if not path or any(ch.isspace() for ch in path) or _CONTROL_OR_NEWLINE.search(path):
        raise bad
    if ".." in path.split("/"):
        raise fail("HZC040", f"the asset {shown(value)} may not step out with '..'")
    if hashmark and not _ANCHOR.fullmatch(anchor):
        raise fail(
            "HZC040",
            f"the anchor in {shown(value)} must be a heading slug: lower-case letters, "
            "digits, '-' and '_' (like checkout or this-week)",
        )
    tidy = posixpath.normpath(path)
    if path.startswith("//"):
        tidy = "/" + tidy.lstrip("/")
    return f"doc:{tidy}" + (f"#{anchor}" if hashmark else "")


AssetRef = Annotated[str, AfterValidator(normalise_asset)]

_HANDLE = re.compile(r"@?[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _approver(value: str) -> str:
    if not _HANDLE.fullmatch(value):
        raise fail("HZC012", f"{shown(value)} is not an approver: write owner or a handle")
    return value.removeprefix("@")


Approver = Annotated[str, AfterValidator(_approver)]

_MODEL = re.compile(
    r"(?:openai|openai-chat|anthropic|ollama):[A-Za-z0-9][A-Za-z0-9._:/+-]{0,99}"
    r"|openai-compatible:[A-Za-z0-9][A-Za-z0-9._:/+-]{0,99}@https?://[^\s@]{1,200}"
)


def _model(value: str) -> str:
    if value != "local" and not _MODEL.fullmatch(value):
        raise fail(
            "HZC070",
            f"{shown(value)} is not a model: write local, or openai:NAME, openai-chat:NAME, "
            "anthropic:NAME, ollama:NAME or openai-compatible:NAME@URL",
        )
    return value


ModelName = Annotated[str, AfterValidator(_model)]

MAX_USD_LIMIT = 1000.0


def _max_usd(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise fail("HZC071", f"must be a number of dollars, 0 or more, not {value}")
    if value > MAX_USD_LIMIT:
        raise fail("HZC071", f"{value} is above the limit of {MAX_USD_LIMIT:g} dollars a turn")
    return value


Usd = Annotated[float, Field(strict=True), AfterValidator(_max_usd)]

_FACET = re.compile(r"[A-Za-z0-9_.:/-]{1,100}")


def _facet(value: str) -> str:
    if not _FACET.fullmatch(value):
        raise fail("HZC012", f"{shown(value)} is not a facet name")
    return value


Facet = Annotated[str, AfterValidator(_facet)]

# --- input arguments, per source and method -------------------------------------------------


def _http_url(value: str) -> str:
    if len(value) > 2048 or not re.fullmatch(r"https?://[^\s/?#]+(?:[/?#]\S*)?", value):
        raise fail("HZC032", f"{shown(value)} is not an http:// or https:// URL")
    return value


_NOT_A_REF = re.compile(r"\.\.|@\{|//|/\.|^[./]|[./]$|\.lock(?:/|$)|^@$")
"""What ``git check-ref-format`` refuses beyond single characters: ``..`` and ``@{`` (ranges,
reflog forms such as ``HEAD@{1}``), empty or dot components, a ``.lock`` component."""


def _branch(value: str) -> str:
    if (
        value.startswith("-")
        or not re.fullmatch(r"[^\s~^:?*\[\\\x00-\x1f\x7f]{1,200}", value)
        or _NOT_A_REF.search(value)
    ):
        raise fail("HZC032", f"{shown(value)} is not a usable git branch or ref")
    return value


def _repo_path(value: str) -> str:
    """A file's path in a repository, tidied (``./a//b`` is ``a/b``): relative, inside it, one
    line, and no option to git."""
    if _CONTROL_OR_NEWLINE.search(value) or len(value) > 1024:
        raise fail("HZC032", f"{shown(value)} is not a path: one line, up to 1024 characters")
    if value.startswith(("/", "~")) or ".." in value.split("/"):
        raise fail(
            "HZC032",
            f"the path {shown(value)} must be relative to the repository's root, without '..'",
        )
    tidy = posixpath.normpath(value)
    if tidy == "." or value.endswith("/") or tidy.startswith("-"):
        raise fail("HZC032", f"{shown(value)} does not name a file of the repository")
    return tidy


RepoPath = Annotated[str, AfterValidator(_repo_path)]


class ArgsModel(FrozenModel):
    """Base of the per-method argument models; only the keys a method knows are accepted."""


class GlobArgs(ArgsModel):
    pattern: LineText
    root: LineText | None = None


class GitLogArgs(ArgsModel):
    repo: LineText
    branch: Annotated[str, AfterValidator(_branch)] | None = None
    window: Duration | None = None
    limit: Annotated[int, Field(strict=True, ge=1, le=10000)] | None = None


class GitFileArgs(ArgsModel):
    """One file of a repository (a path or URL, like the team repository) at a branch or tag
    (unset: its default branch)."""

    repo: LineText
    path: RepoPath
    branch: Annotated[str, AfterValidator(_branch)] | None = None


class ShellRunArgs(ArgsModel):
    command: CommandText
    cwd: LineText | None = None
    timeout: TimeoutSeconds | None = None


class HttpGetArgs(ArgsModel):
    url: Annotated[str, AfterValidator(_http_url)]


class DocumentSectionArgs(ArgsModel):
    path: LineText
    anchor: Annotated[str, _line_text(200)] | None = None


class ApprovedOutputArgs(ArgsModel):
    heinzel: HeinzelName
    output: KeyName


SOURCES: dict[str, dict[str, type[ArgsModel]]] = {
    "files": {"glob": GlobArgs},
    "git": {"commits": GitLogArgs, "merged_pull_requests": GitLogArgs, "file": GitFileArgs},
    "shell": {"run": ShellRunArgs},
    "http": {"get": HttpGetArgs},
    "document": {"section": DocumentSectionArgs},
    "heinzel": {"approved_output": ApprovedOutputArgs},
}
"""Every source, its methods and the model of each method's ``args``."""

SOURCE_CAPABILITY: dict[str, str] = {
    "files": "files:read",
    "git": "git:read",
    "shell": "shell:run",
    "http": "http:read",
    "document": "documents:read",
    "heinzel": "heinzels:read",
}
"""The ``requires`` entry an input of each source needs."""

CAPABILITY_IMPLIES: dict[str, frozenset[str]] = {
    "documents:write": frozenset({"documents:read"}),
}

SourceName = Literal["files", "git", "shell", "http", "document", "heinzel"]
ArgValue = str | int | float

# --- the hz table ---------------------------------------------------------------------------


#: The flow's keys of an input (``docs/flow.md``): left out of its dump when unset, so
#: contracts that do not use them keep the fingerprint they had before the keys existed.
FLOW_KEYS = ("needed_by", "nudge", "escalate")
DEFAULT_NUDGES = ("1d", "4h", "1h")


class InputSpec(FrozenModel):
    """One watched input: where it is read from, how often it is polled, which facet counts.

    On another heinzel's approved output (source ``heinzel``), ``needed_by`` says
    when this reader needs it approved: the upstream's owner is nudged before
    (``nudge``, how long before each time), the people named in ``escalate`` are
    told at the deadline, and a turn that finds a newer draft still waiting
    proceeds with the last approved text and says so.
    """

    source: SourceName
    method: str
    args: dict[str, ArgValue] = Field(default_factory=dict)
    recheck: Duration | None = None
    facet: Facet | None = None
    needed_by: CronExpr | None = None
    nudge: list[Duration] | None = Field(default=None, max_length=8)
    escalate: list[Approver] | None = Field(default=None, max_length=8)

    @model_validator(mode="after")
    def _flow_is_about_an_upstream(self) -> InputSpec:
        if self.source != "heinzel" and self.needed_by is not None:
            raise fail(
                "HZC103",
                "needed_by is for another heinzel's approved output (source: heinzel), "
                f"not a {self.source} input",
            )
        if self.needed_by is None and (self.nudge is not None or self.escalate is not None):
            raise fail("HZC104", "nudge and escalate need needed_by: when is the output due?")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_flow(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        for key in FLOW_KEYS:
            if dumped.get(key) is None:
                dumped.pop(key, None)
        return dumped

    def nudges(self) -> list[str]:
        """How long before ``needed_by`` the upstream's owner is nudged, longest first."""
        spelled = DEFAULT_NUDGES if self.nudge is None else self.nudge
        return sorted(spelled, key=duration_seconds, reverse=True)

    def request(self) -> dict[str, Any]:
        """The source, method and args, the part that decides what is fetched."""
        return {"source": self.source, "method": self.method, "args": dict(self.args)}


class PublishSpec(FrozenModel):
    """A place the heinzel may write a draft to."""

    capability: Literal["documents.place_draft"]
    asset: AssetRef


class OutputSpec(FrozenModel):
    """A named result; ``valid_for`` says how long an approved one stays true."""

    valid_for: Duration | None = None


DEFAULT_MAX_TOKENS = 100_000

Tokens = Annotated[int, Field(strict=True, ge=1000, le=10_000_000)]


class AgentSpec(FrozenModel):
    """Which model thinks (unset: the home's ``[model] default``), and the most one turn may
    spend: dollars where the model's price is known, tokens on every model (the only cap a
    model without a known price has)."""

    model: ModelName | None = None
    max_usd: Usd = 1.0
    max_tokens: Tokens = DEFAULT_MAX_TOKENS


def _sorted_unique(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(set(values)))


def _sorted_publishes(values: tuple[PublishSpec, ...]) -> tuple[PublishSpec, ...]:
    return tuple(sorted(values, key=lambda spec: (spec.capability, spec.asset)))


def _approvers(values: tuple[str, ...]) -> tuple[str, ...]:
    if not values:
        raise fail("HZC017", "may not be empty: name owner or someone's handle")
    return _sorted_unique(values)


_ROSTER_HANDLE = re.compile(HANDLE)


def _delegate(value: str) -> str:
    if not _ROSTER_HANDLE.match(value):
        raise fail(
            "HZC101",
            f"{shown(value)} is not a roster handle: lower-case letters, digits, '.', '_', '-'",
        )
    return value


def _team_repo(value: str) -> str:
    if not value.strip() or _CONTROL_OR_NEWLINE.search(value) or len(value) > 4096:
        raise fail("HZC101", "must be the team repository's path or URL, on one line")
    return value.strip()


class TeamSpec(FrozenModel):
    """A team heinzel's team repository (unset: the home's ``[team] repo``) and the homes, by
    roster handle, that may run it while its owner's daemon is silent (``docs/team.md``)."""

    repo: Annotated[str, AfterValidator(_team_repo)] | None = None
    delegates: Annotated[
        tuple[Annotated[str, AfterValidator(_delegate)], ...], AfterValidator(_sorted_unique)
    ] = ()


#: A ``discover`` hint with this prefix matches paths in the team repository's inventory.
TEAM_HINT = "team:"
MAX_HINTS = 20


def _discover_hint(value: str) -> str:
    if not value.strip() or _CONTROL_OR_NEWLINE.search(value) or len(value) > 512:
        raise fail("HZC105", "a discover hint is a glob on one line, up to 512 characters")
    team = value.startswith(TEAM_HINT)
    pattern = value.removeprefix(TEAM_HINT)
    if ".." in pattern.split("/"):
        raise fail("HZC105", f"the discover hint {shown(value)} may not climb out with '..'")
    if not pattern.strip("/") or pattern.endswith("/"):
        raise fail("HZC105", f"the discover hint {shown(value)} names no files")
    if team and pattern.startswith(("/", "~")):
        raise fail(
            "HZC105",
            f"the discover hint {shown(value)} is relative to the team repository's root, "
            "like team:docs/**/*.md",
        )
    return value


DiscoverHint = Annotated[str, AfterValidator(_discover_hint)]


def _at_most_hints(value: Any) -> Any:
    if isinstance(value, list | tuple) and len(value) > MAX_HINTS:
        raise fail("HZC105", f"a contract has at most {MAX_HINTS} discover hints, not {len(value)}")
    return value


class HzTable(FrozenModel):
    """The machine part of a contract, normalised: defaults filled, sets sorted."""

    schedule: CronExpr | None = None
    render_on_schedule: Literal["always", "if-moved"] = "always"
    inputs: dict[KeyName, InputSpec] = Field(default_factory=dict)
    requires: Annotated[tuple[Capability, ...], AfterValidator(_sorted_unique)] = ()
    publishes: Annotated[tuple[PublishSpec, ...], AfterValidator(_sorted_publishes)] = ()
    outputs: dict[KeyName, OutputSpec] = Field(default_factory=dict)
    approvers: Annotated[tuple[Approver, ...], AfterValidator(_approvers)] = ("owner",)
    agent: AgentSpec = Field(default_factory=AgentSpec)
    team: TeamSpec | None = None
    discover: Annotated[
        tuple[DiscoverHint, ...], BeforeValidator(_at_most_hints), AfterValidator(_sorted_unique)
    ] = ()
    """Globs over the user's folders (or ``team:`` globs over the team repository's files)
    whose new files hz offers this heinzel to read (``docs/discovery.md``)."""


# --- the body and the whole contract --------------------------------------------------------

KNOWN_SECTIONS = ("Goal", "Requires", "Maintains", "Continuity", "Done when")


class ContractSection(FrozenModel):
    """A ``###`` section of the body; known titles are spelled as in ``KNOWN_SECTIONS``."""

    title: str
    text: str


class ContractBody(FrozenModel):
    """The Markdown body: text before the first section, then the sections in file order."""

    preamble: str = ""
    sections: tuple[ContractSection, ...] = ()

    def section(self, title: str) -> str | None:
        """The text of a section by title (any case), or None if the body has none."""
        wanted = title.casefold()
        return next((s.text for s in self.sections if s.title.casefold() == wanted), None)


class CompiledContract(FrozenModel):
    """A contract as hz uses it; ``fingerprint`` changes exactly when its meaning does."""

    format: Literal[1, 2] = FORMAT_VERSION
    name: HeinzelName
    namespace: Namespace = "me"
    description: str | None = None
    hz: HzTable
    body: ContractBody
    fingerprint: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]

    @property
    def goal(self) -> str:
        return self.body.section("Goal") or ""

    @property
    def inputs(self) -> dict[str, InputSpec]:
        return self.hz.inputs

    @property
    def assets(self) -> tuple[str, ...]:
        """The asset refs this contract may publish drafts to, without duplicates."""
        return tuple(dict.fromkeys(spec.asset for spec in self.hz.publishes))

    @property
    def schedule(self) -> str | None:
        return self.hz.schedule
