"""The lint on everything hz writes to a team repository.

What goes to ``hz/state`` is read by the whole team and kept forever, so it
may hold ids, fingerprints, numbers, enums, roster handles and asset refs,
and nothing anyone wrote: no field named for text (a body, a lesson, a
summary, a report line, a reason), no name, no e-mail address, no value
with whitespace in it. It checks the JSON that would be written, not the
models, so a receipt built any other way is held to the same rule.
"""

from __future__ import annotations

import re
from typing import Any

from hz_kernel.errors import HzError

TEXT_FIELD = "HZS101"
EMAIL = "HZS102"
TEXT_VALUE = "HZS103"
#: Longer strings are text, whatever they hold (an asset ref is far shorter).
MAX_VALUE = 512

#: Field names refused wherever they appear (compared without case, ``_`` or ``-``).
_NAMES = frozenset({"draft", "reason", "detail", "wants", "decisions", "proposal", "author"})
#: Parts of field names refused anywhere in a name (``display_name``, ``author_email``).
_PARTS = (
    "text", "body", "lesson", "summar", "report", "transcript", "content", "message",
    "name", "mail", "address", "question", "notice", "committer", "comment",
)  # fmt: skip
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_NOT_A_TOKEN = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def lint(document: dict[str, Any], place: str) -> None:
    """Refuse ``document`` (HZS101–HZS103, naming the field) if it carries any text."""
    _walk(document, "", place)


def _walk(value: Any, field: str, place: str) -> None:
    if isinstance(value, dict):
        for name, item in value.items():
            path = f"{field}.{name}" if field else str(name)
            _check_name(str(name), path, place)
            _walk(item, path, place)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{field}[{index}]", place)
    elif isinstance(value, str):
        _check_value(value, field, place)


def _check_name(name: str, path: str, place: str) -> None:
    bare = re.sub(r"[^a-z0-9]", "", name.lower())
    if bare in _NAMES or any(part in bare for part in _PARTS):
        raise HzError(TEXT_FIELD, f"field {path!r} would carry text to the team repository", place)


def _check_value(value: str, path: str, place: str) -> None:
    if _EMAIL.search(value):
        raise HzError(EMAIL, f"field {path!r} carries an e-mail address", place)
    if _NOT_A_TOKEN.search(value) or len(value) > MAX_VALUE:
        raise HzError(TEXT_VALUE, f"field {path!r} holds text, not an id or a fingerprint", place)
