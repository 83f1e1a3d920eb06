"""``<home>/cockpit.json``: the cockpit's own small preferences (theme, key overrides).

The kernel never reads this file; it is the cockpit's memory of the user's
last choices. A damaged file must not keep the cockpit from starting, so it
is read leniently: what does not validate falls back to the defaults.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hz_kernel.home import Home
from hz_tui.files import NotRegular, read_private, write_private

PREFS_NAME = "cockpit.json"


class CockpitPrefs(BaseModel):
    """What the cockpit remembers between runs."""

    model_config = ConfigDict(defer_build=True, extra="ignore", frozen=True)

    theme: str | None = None
    keymap: dict[str, str] = Field(default_factory=dict)
    bell: bool | None = None
    """Ring the terminal bell with a toast; None follows ``[cockpit] bell`` in hz.toml."""


def prefs_path(home: Home) -> Path:
    return home.root / PREFS_NAME


def load_prefs(home: Home) -> tuple[CockpitPrefs, str | None]:
    """The saved preferences and, when the file was unusable, a one-line reason."""
    path = prefs_path(home)
    try:
        raw = read_private(path)
    except NotRegular as exc:
        return CockpitPrefs(), exc.one_line()
    except OSError as exc:
        return CockpitPrefs(), f"{path}: {exc.strerror}"
    if raw is None:
        return CockpitPrefs(), None
    try:
        return CockpitPrefs.model_validate(orjson.loads(raw)), None
    except (orjson.JSONDecodeError, ValidationError):
        return CockpitPrefs(), f"{path}: not valid cockpit preferences; using defaults"


def save_prefs(home: Home, prefs: CockpitPrefs) -> None:
    """Write the preferences atomically as a private file (0600)."""
    data = orjson.dumps(prefs.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    write_private(prefs_path(home), data, code="HZS080", what="cockpit preferences")
