"""What a daemon was started with, so a restart can start the next one the same way.

At start the daemon writes ``<home>/daemon.start.json`` (0600): its command
line, working directory, the values of the ``HZ_*`` variables and provider
URLs, and only the *names* of the provider keys that were set. Secret values
are never written: a restart takes them from its own environment and says
which ones it lacks (``HZD152``), so the new daemon is not silently keyless.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from hz_kernel.daemon.logs import SUPERVISOR_ENV
from hz_kernel.home import Home
from hz_kernel.store.fsutil import atomic_write, read_nofollow, store_error

START_RECORD_NAME = "daemon.start.json"
#: Settings that live in the environment, kept by value (never secrets: see ``is_secret``).
VALUE_PREFIXES = ("HZ_",)
VALUE_NAMES = frozenset(
    {
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OLLAMA_BASE_URL",
        # Where a key is kept (``<KEY>_FILE``): a path, never the key itself.
        "OPENAI_API_KEY_FILE",
        "ANTHROPIC_API_KEY_FILE",
        "OLLAMA_API_KEY_FILE",
    }
)
#: Provider keys: kept by name only.
SECRET_NAMES = frozenset({"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY"})
_SECRET_SUFFIX = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)$")


def is_secret(name: str) -> bool:
    return name in SECRET_NAMES or bool(_SECRET_SUFFIX.search(name))


def _kept(name: str) -> bool:
    return name.startswith(VALUE_PREFIXES) or name in VALUE_NAMES or name in SECRET_NAMES


class StartRecord(BaseModel):
    """``daemon.start.json``: how the daemon with ``pid`` was started."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    pid: int
    argv: list[str]
    cwd: str
    env: dict[str, str] = {}
    """``HZ_*`` variables and provider URLs, by value; never a secret."""
    secrets: list[str] = []
    """Names of the secret variables that were set (their values are not stored)."""

    @classmethod
    def of_this_process(cls) -> StartRecord:
        kept = {name: value for name, value in os.environ.items() if _kept(name) and value}
        return cls(
            pid=os.getpid(),
            argv=list(sys.orig_argv),
            cwd=os.getcwd(),
            env={name: value for name, value in kept.items() if not is_secret(name)},
            secrets=sorted(name for name in kept if is_secret(name)),
        )

    def environment(self, current: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """The environment for the next daemon, and the secret names ``current`` lacks.

        It is ``current`` with every kept variable replaced by what the
        daemon had: recorded values, and secrets from ``current`` only if the
        daemon had them too. A service manager's own variables never pass.
        """
        env = {
            name: value
            for name, value in current.items()
            if not _kept(name) and name not in SUPERVISOR_ENV
        }
        env |= {
            name: value for name, value in self.env.items() if _kept(name) and not is_secret(name)
        }
        missing = []
        for name in self.secrets:
            if current.get(name):
                env[name] = current[name]
            else:
                missing.append(name)
        return env, missing


def write_record(home: Home) -> None:
    """Keep how this daemon was started; a home it cannot write to is a coded refusal
    (``HZS092``, ``HZS091``), never an internal error."""
    record = StartRecord.of_this_process()
    path = home.root / START_RECORD_NAME
    try:
        atomic_write(path, record.model_dump_json().encode())
    except OSError as exc:
        raise store_error(exc, path) from None


def read_record(home: Home, pid: int) -> StartRecord | None:
    """The record of the daemon with ``pid``; None when missing, unreadable or another's."""
    try:
        record = StartRecord.model_validate_json(read_nofollow(home.root / START_RECORD_NAME))
    except (OSError, ValidationError):
        return None
    return record if record.pid == pid else None
