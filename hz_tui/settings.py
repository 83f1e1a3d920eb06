"""``<home>/cockpit.json``: the cockpit's own small preferences (theme, key overrides).

The kernel never reads this file; it is the cockpit's memory of the user's
last choices. A damaged file must not keep the cockpit from starting, so it
is read leniently: a preference with a wrong value (of the wrong type, or
a theme hz does not have) takes its default (``HZU237``, naming the key and
the value) and the others are kept; a key that is no preference (a typo)
is ignored with ``HZU243``; a file that is not a JSON
object gives the defaults (``HZU238``, saying where its JSON broke), and is
kept aside, never written over, when a preference is next saved
(``HZU239``). A ``keymap`` entry is checked one by one where it is used
(``hz_tui.key_overrides``), so one bad entry costs only itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError, echoed
from hz_kernel.home import Home
from hz_tui.files import NotRegular, read_private, write_private
from hz_tui.themes import THEME_NAMES

PREFS_NAME = "cockpit.json"
#: A preferences file is a few hundred bytes; one this large is not read as one.
PREFS_MAX_BYTES = 1 << 20


def _a_theme(name: str | None) -> str | None:
    if name is not None and name not in THEME_NAMES:
        raise ValueError("not a theme")
    return name


class CockpitPrefs(BaseModel):
    """What the cockpit remembers between runs.

    Strict: ``"bell": "yes"`` or ``1`` is a wrong value the user is told about
    (``HZU237``), never read as true.
    """

    model_config = ConfigDict(defer_build=True, extra="ignore", frozen=True, strict=True)

    theme: Annotated[str | None, AfterValidator(_a_theme)] = None
    keymap: dict[str, object] = Field(default_factory=dict)
    """Binding id -> keys; each value is checked in ``hz_tui.key_overrides`` (``HZU236``)."""
    bell: bool | None = None
    """Ring the terminal bell with a toast; None follows ``[cockpit] bell`` in hz.toml."""


#: What each preference takes, for the line that names a wrong value.
EXPECTED = {
    "theme": f"one of {', '.join(THEME_NAMES)}",
    "keymap": "an object of binding ids to keys",
    "bell": "true or false",
}


def prefs_path(home: Home) -> Path:
    return home.root / PREFS_NAME


def load_prefs(home: Home) -> tuple[CockpitPrefs, list[str]]:
    """The saved preferences and a line for each thing in the file that was not used."""
    path = prefs_path(home)
    try:
        raw = read_private(path, PREFS_MAX_BYTES)
    except NotRegular as exc:
        return CockpitPrefs(), [exc.one_line()]
    except OSError as exc:
        return CockpitPrefs(), [f"{path}: {exc.strerror}"]
    if raw is None:
        return CockpitPrefs(), []
    data, why = _parsed(raw)
    if data is None:
        return CockpitPrefs(), [f"HZU238: {path}: {why}; using defaults"]
    problems = []
    unknown = sorted(set(data) - set(EXPECTED))
    if unknown:
        problems.append(
            f"HZU243: {path}: {echoed(', '.join(unknown))}: not a preference "
            f"({', '.join(EXPECTED)}); ignored"
        )
    try:
        return CockpitPrefs.model_validate(data), problems
    except ValidationError as exc:
        bad = sorted({str(error["loc"][0]) for error in exc.errors() if error["loc"]})
    kept = {name: value for name, value in data.items() if name not in bad}
    try:
        prefs = CockpitPrefs.model_validate(kept)
    except ValidationError:
        prefs = CockpitPrefs()
    wrong = "; ".join(f"{name}: {_quoted(data[name])} is not {EXPECTED[name]}" for name in bad)
    problems.insert(0, f"HZU237: {path}: {wrong}; the default used, the rest kept")
    return prefs, problems


def _quoted(value: object) -> str:
    """A wrong value as the file has it (``"yes"``), cut short and safe to show."""
    text = orjson.dumps(value).decode()
    return echoed(text if len(text) <= 40 else text[:39] + "…")


def save_prefs(home: Home, prefs: CockpitPrefs) -> str | None:
    """Write the preferences atomically as a private file (0600); a line to show, if any.

    A file there that did not read as preferences (``HZU238``: a typo the user
    is about to fix) is never written over: it is kept aside, and the line
    (``HZU239``) says where.
    """
    path = prefs_path(home)
    note = None
    try:
        raw = read_private(path, PREFS_MAX_BYTES)
    except OSError:
        raw = None  # not a file one could read: nothing of the user's to keep
    if raw is not None and _parsed(raw)[0] is None:
        aside = path.with_name(f"{path.name}.bad-{now_utc():%Y%m%dT%H%M%SZ}")
        try:
            os.replace(path, aside)
        except OSError as exc:
            raise HzError(
                "HZS080", f"cannot keep the unread preferences aside ({exc.strerror})", str(path)
            ) from None
        note = (
            f"HZU239: {path} did not read as preferences: kept as {aside.name}; a new one is saved"
        )
    data = orjson.dumps(prefs.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    write_private(path, data, code="HZS080", what="cockpit preferences")
    return note


def _parsed(raw: bytes) -> tuple[dict[str, object] | None, str]:
    """The file's JSON object, or None and why it is none (where JSON broke, or its size)."""
    if len(raw) >= PREFS_MAX_BYTES:
        return None, f"larger than {PREFS_MAX_BYTES // 1024} KiB, not read"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(data, dict):
        return None, "not a JSON object of preferences"
    return data, ""
