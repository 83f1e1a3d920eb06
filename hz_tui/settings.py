"""``<home>/cockpit.json``: the cockpit's own small preferences (theme, key overrides).

The kernel never reads this file; it is the cockpit's memory of the user's
last choices. A damaged file must not keep the cockpit from starting, so it
is read leniently: a preference that does not validate takes its default
(``HZU237``, naming it) and the others are kept; a file that is not a JSON
object gives the defaults (``HZU238``). A ``keymap`` entry is checked one by
one where it is used (``hz_tui.key_overrides``), so one bad entry costs only
itself.
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
    keymap: dict[str, object] = Field(default_factory=dict)
    """Binding id -> keys; each value is checked in ``hz_tui.key_overrides`` (``HZU236``)."""
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
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return CockpitPrefs(), f"HZU238: {path}: not a JSON object of preferences; using defaults"
    try:
        return CockpitPrefs.model_validate(data), None
    except ValidationError as exc:
        bad = sorted({str(error["loc"][0]) for error in exc.errors() if error["loc"]})
    kept = {name: value for name, value in data.items() if name not in bad}
    try:
        prefs = CockpitPrefs.model_validate(kept)
    except ValidationError:
        prefs = CockpitPrefs()
    return prefs, f"HZU237: {path}: {', '.join(bad)} not valid; the default used, the rest kept"


def save_prefs(home: Home, prefs: CockpitPrefs) -> None:
    """Write the preferences atomically as a private file (0600)."""
    data = orjson.dumps(prefs.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    write_private(prefs_path(home), data, code="HZS080", what="cockpit preferences")
