"""The user's key overrides (``keymap`` in ``cockpit.json``), checked before the cockpit uses them.

An override names a binding id (F1 lists them) and the keys it should answer to,
comma-separated. One that names no binding (``HZU230``), gives no key
(``HZU231``), gives something other than a string of keys (``HZU236``), or
would put two bindings of one screen or widget on one key (``HZU232``) is
left out with a one-line notice and the binding keeps its default; the
others apply. An id that was renamed (``keymap.ALIASES``) still
applies, to the binding it became.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

import orjson
from textual.binding import Binding

from hz_tui import keymap


def resolve(wanted: Mapping[str, object]) -> tuple[dict[str, str], list[str]]:
    """The overrides to apply (by current id) and a notice line for each one left out."""
    known = keymap.binding_ids()
    overrides: dict[str, str] = {}
    problems: list[str] = []
    for given, keys in wanted.items():
        binding_id = keymap.ALIASES.get(given, given)
        if binding_id not in known:
            problems.append(
                f"HZU230: cockpit.json keymap: no binding has the id {given!r} "
                "(F1 lists every id); ignored"
            )
            continue
        if not isinstance(keys, str):
            shown = orjson.dumps(keys, default=str).decode()[:40]
            problems.append(
                f"HZU236: cockpit.json keymap: {given!r} must be its keys as a string "
                f'(e.g. "ctrl+y" or "j,down"), not {shown}; ignored'
            )
            continue
        parts = [key.strip() for key in keys.split(",")]
        if not all(map(_is_key, parts)):
            problems.append(
                f"HZU231: cockpit.json keymap: {given!r} names no key "
                f"({_shown(keys)}; a key is e.g. j, ?, f5, ctrl+y or shift+enter); ignored"
            )
            continue
        overrides[binding_id] = ",".join(dict.fromkeys(parts))  # a key named twice counts once
    for node in keymap.NODES:
        # The app's keys work on every screen: a screen's key on one of them hides it there.
        scope = node if node is keymap.APP else [*node, *keymap.APP]
        problems += _drop_clashes(scope, overrides)
    return overrides, problems


#: A key as Textual names it: modifiers joined by ``+`` before a key's name (``ctrl+y``,
#: ``f5``, ``question_mark``); a single printable character stands for itself.
_KEY_NAME = re.compile(r"(?:(?:ctrl|shift|alt|meta|super|hyper)\+)*[a-z0-9_]{1,24}", re.I)


def _is_key(part: str) -> bool:
    return bool(_KEY_NAME.fullmatch(part)) or (len(part) == 1 and part.isprintable())


def _named(key: str) -> str:
    """A key by the name Textual gives it: ``?`` is ``question_mark`` (as a binding's is)."""
    if len(key) != 1 or key.isalnum():
        return key
    try:
        return unicodedata.name(key).lower().replace("-", "_").replace(" ", "_")
    except ValueError:
        return key


def _shown(keys: str) -> str:
    """The value as a notice may show it: escaped (never drawn raw) and cut short."""
    quoted = repr(keys)
    return quoted if len(quoted) <= 40 else quoted[:39] + "…"


def _drop_clashes(node: list[Binding], overrides: dict[str, str]) -> list[str]:
    """Leave out the overrides that give one key to two of ``node``'s bindings."""
    problems = []
    while True:
        holders: dict[str, list[str]] = {}
        for binding in node:
            if binding.id:
                keys = overrides.get(binding.id, binding.key).split(",")
                for key in dict.fromkeys(_named(key.strip()) for key in keys):
                    holders.setdefault(key, []).append(binding.id)
        clash = next(
            (
                (key, ids)
                for key, ids in holders.items()
                if len(ids) > 1 and set(ids) & set(overrides)
            ),
            None,
        )
        if clash is None:
            return problems
        key, ids = clash
        dropped = [i for i in ids if i in overrides]
        for binding_id in dropped:
            del overrides[binding_id]
        problems.append(
            f"HZU232: cockpit.json keymap: {key!r} would run both {ids[0]} and {ids[1]} on one "
            f"screen; the override of {', '.join(dropped)} is ignored"
        )
