"""``<home>/cockpit.json``: the cockpit's own small preferences (theme, key overrides).

The kernel never reads this file; it is the cockpit's memory of the user's
last choices. A damaged file must not keep the cockpit from starting, so it
is read leniently: what does not validate falls back to the defaults.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hz_kernel.errors import HzError
from hz_kernel.home import Home

PREFS_NAME = "cockpit.json"


class CockpitPrefs(BaseModel):
    """What the cockpit remembers between runs."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    theme: str | None = None
    keymap: dict[str, str] = Field(default_factory=dict)


def prefs_path(home: Home) -> Path:
    return home.root / PREFS_NAME


def load_prefs(home: Home) -> tuple[CockpitPrefs, str | None]:
    """The saved preferences and, when the file was unusable, a one-line reason."""
    path = prefs_path(home)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return CockpitPrefs(), None
    except OSError as exc:
        return CockpitPrefs(), f"{path}: {exc.strerror}"
    try:
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(1 << 20)
        return CockpitPrefs.model_validate(orjson.loads(raw)), None
    except (orjson.JSONDecodeError, ValidationError, OSError):
        return CockpitPrefs(), f"{path}: not valid cockpit preferences; using defaults"


def save_prefs(home: Home, prefs: CockpitPrefs) -> None:
    """Write the preferences atomically as a private file (0600).

    The kernel's ``fsutil`` helpers sit in ``hz_kernel.store``, which the
    layering keeps out of the cockpit; this is the same temp-fsync-rename.
    """
    path = prefs_path(home)
    data = orjson.dumps(prefs.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise HzError(
            "HZS080", f"cannot save cockpit preferences ({exc.strerror})", str(path)
        ) from None
