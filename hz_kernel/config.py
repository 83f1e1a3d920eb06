"""``<home>/hz.toml``: the user's settings, validated at start.

Unknown keys are refused so a typo never silently falls back to a default.
Every value has a default, so a home without the file works.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hz_kernel.errors import HzError, field_problem
from hz_kernel.store.fsutil import open_regular
from hz_kernel.terms import HANDLE


class _Section(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class HeinzelSettings(_Section):
    retention_days: int = Field(default=90, ge=0, le=36500)
    max_usd: float = Field(default=1.0, ge=0)
    max_usd_per_day: float = Field(default=10.0, ge=0)
    max_wakes_per_tick: int = Field(default=10, ge=1, le=10000)
    max_resumes: int = Field(default=3, ge=0, le=100)
    max_wait_days: float = Field(default=7.0, gt=0)
    turn_timeout_s: float = Field(default=900.0, gt=0)
    summary_after_turns: int = Field(default=20, ge=1)
    summary_after_chars: int = Field(default=24000, ge=1000)
    summary_keep_turns: int = Field(default=5, ge=0)
    timezone: str = "UTC"


#: The built-in offline model's spec (``hz_kernel.adapters.local_model``).
LOCAL_MODEL = "local"


class ModelSettings(_Section):
    default: str = LOCAL_MODEL
    windows: dict[str, Annotated[int, Field(ge=1024, le=100_000_000)]] = {}
    """Context windows in tokens by model spec, over the known ones (``engine.window``)."""


class DaemonSettings(_Section):
    """``[daemon]``: the detached kernel's address, admission limits and feed sizes.

    The host must be a loopback address; the daemon refuses any other at
    start. ``unix_socket`` serves on ``<home>/daemon.sock`` instead of TCP.
    Every kernel (the daemon's and an embedded one) admits work under the
    limits here: ``max_concurrent_turns`` turns and ``max_concurrent_attempts``
    model requests at once, and nothing new while free memory is under
    ``min_free_memory_mb`` (default: the larger of 1024 MB and an eighth of RAM).
    The connection limits (``hz_kernel.daemon.connections``) keep local processes
    without the token from starving the daemon of sockets.
    ``autostart = false`` keeps ``hz`` and the CLI from starting a daemon (they
    still adopt one that runs).
    ``daemon.log`` rotates at ``log_max_bytes``, keeping ``log_files`` older files.
    """

    tick_seconds: float = Field(default=60.0, gt=0, le=86400)
    max_concurrent_turns: int = Field(default=4, ge=1, le=256)
    max_concurrent_attempts: int = Field(default=4, ge=1, le=256)
    min_free_memory_mb: int | None = Field(default=None, ge=0, le=1_048_576)
    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    unix_socket: bool = False
    feed_heartbeat_seconds: float = Field(default=15.0, gt=0, le=60)
    feed_queue_items: int = Field(default=4096, ge=8, le=1_000_000)
    header_timeout_seconds: float = Field(default=3.0, gt=0, le=600)
    idle_timeout_seconds: int = Field(default=5, ge=1, le=3600)
    send_timeout_seconds: float = Field(default=10.0, gt=0, le=3600)
    max_unauthenticated_connections: int = Field(default=128, ge=1, le=100_000)
    autostart: bool = True
    log_max_bytes: int = Field(default=5 << 20, ge=1024, le=1 << 30)
    log_files: int = Field(default=3, ge=1, le=20)


class DocumentsSettings(_Section):
    """Where relative paths in contracts (documents and sources) are resolved."""

    root: str = "~"

    def resolve(self, path: str) -> Path:
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else Path(self.root).expanduser() / candidate


class CockpitSettings(_Section):
    theme: str = "hz-dark"
    bell: bool = False
    undo_seconds: float = Field(default=5.0, ge=1.0, le=600.0)
    """How long a rejection in the review desk waits for ``u`` before it is sent."""


#: The placeholders a runner's command may hold; hz fills them in when the runner starts.
TASK_PLACEHOLDER = "{task}"
REPORT_FILE_PLACEHOLDER = "{report_file}"

RunnerName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")]


class HandoffRunner(_Section):
    """One coding agent a turn may hand a task to (``docs/handoff.md``).

    ``command`` is run without a shell in the working directory the call
    names. The task goes where an argument holds ``{task}``, else on stdin.
    ``report`` says where the runner's final answer is: its stdout, the
    result line of Claude Code's ``--output-format json``/``stream-json``, or
    the file hz names in ``{report_file}`` (Codex's ``--output-last-message``).
    """

    command: tuple[Annotated[str, Field(min_length=1)], ...] = Field(min_length=1)
    timeout_s: float = Field(default=1800.0, gt=0, le=86400)
    max_output_bytes: int = Field(default=1 << 20, ge=4096, le=64 << 20)
    report: Literal["stdout", "claude-json", "file"] = "stdout"

    @model_validator(mode="after")
    def _report_file_named(self) -> HandoffRunner:
        named = any(REPORT_FILE_PLACEHOLDER in arg for arg in self.command)
        if named != (self.report == "file"):
            raise ValueError(
                f'report = "file" and a {REPORT_FILE_PLACEHOLDER} argument go together'
            )
        return self


class HandoffSettings(_Section):
    """``[handoff]``: the runners by name and the one a call without a name gets."""

    default: RunnerName | None = None
    runners: dict[RunnerName, HandoffRunner] = {}

    @model_validator(mode="after")
    def _default_known(self) -> HandoffSettings:
        if self.default is not None and self.default not in self.runners:
            raise ValueError(f"default names no runner in [handoff.runners]: {self.default}")
        return self


class TeamSettings(_Section):
    """``[team]``: this home's roster handle (who holds a lease, who approved) and the team
    repository a team heinzel uses when its contract names none (``docs/team.md``).

    Every home sharing a team repository needs its own handle.
    """

    handle: str | None = Field(default=None, pattern=HANDLE)
    repo: str | None = Field(default=None, min_length=1, max_length=4096)


class Settings(_Section):
    """Every section; one left out of the file is its defaults.

    The defaults are constructed, not validated: they are valid by
    definition, and validating them would build five validators at import
    and another set at every start (a cockpit's first frame waits on it).
    """

    heinzel: HeinzelSettings = Field(default_factory=HeinzelSettings.model_construct)
    model: ModelSettings = Field(default_factory=ModelSettings.model_construct)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings.model_construct)
    documents: DocumentsSettings = Field(default_factory=DocumentsSettings.model_construct)
    cockpit: CockpitSettings = Field(default_factory=CockpitSettings.model_construct)
    handoff: HandoffSettings = Field(default_factory=HandoffSettings.model_construct)
    team: TeamSettings = Field(default_factory=TeamSettings.model_construct)


def load_settings(path: Path) -> Settings:
    """Read and validate ``hz.toml``; a missing file gives the defaults.

    A link to a settings file is fine (dotfile managers make them); a FIFO,
    socket or device is refused at once rather than read (it would block). A
    link to nothing is refused too: the user meant settings, and the defaults
    (another documents root) would read every waiting draft's document as gone.
    """
    try:
        fd = open_regular(path, os.O_RDONLY, follow=True)
        with os.fdopen(fd, "rb") as file:
            raw = file.read()
    except FileNotFoundError:
        if path.is_symlink():
            raise HzError(
                "HZS060", "cannot read settings (a link to a file that is not there)", str(path)
            ) from None
        return Settings.model_construct()
    except OSError as exc:
        raise HzError("HZS060", f"cannot read settings ({exc.strerror})", str(path)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HzError("HZS061", f"not valid TOML: {exc}", str(path)) from None
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise HzError("HZS062", f"{where}: {field_problem(first)}", str(path)) from None
