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
        if not all(parts):
            problems.append(
                f"HZU231: cockpit.json keymap: {given!r} names no key ({keys!r}); ignored"
            )
            continue
        overrides[binding_id] = ",".join(dict.fromkeys(parts))  # a key named twice counts once
    for node in keymap.NODES:
        problems += _drop_clashes(node, overrides)
    return overrides, problems


def _drop_clashes(node: list[Binding], overrides: dict[str, str]) -> list[str]:
    """Leave out the overrides that give one key to two of ``node``'s bindings."""
    problems = []
    while True:
        holders: dict[str, list[str]] = {}
        for binding in node:
            if binding.id:
                keys = overrides.get(binding.id, binding.key).split(",")
                for key in dict.fromkeys(key.strip() for key in keys):
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
