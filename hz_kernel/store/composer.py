"""The composer's file: a heinzel's unsent message, its mode, its history, under a revision.

``<home>/cockpit/composer-<heinzel id>.json`` holds what a user is typing to
one heinzel, whichever window (a local cockpit, one attached with
``--connect``) types it. Every change goes through ``update`` under one
``flock`` (``<home>/cockpit/composer.lock``), so reading the revision,
checking it and writing the next one are a single step for every thread and
process on the home: two windows can never both write over the same
revision. The file is never deleted (its revision would start again at
0 and a stale window's old revision could match a new text); files written
before revisions existed read as revision 0. For the same reason a file
that cannot be read is reported (``HZU229``), never taken for an empty one
and written over, and the file is kept well under the size it is read back
at: the text and the outgoing message are bounded by the requests that
save them, and the history drops its oldest messages past
``HISTORY_MAX_BYTES``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import orjson
from pydantic import ValidationError

from hz_kernel import api
from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import (
    FILE_MODE,
    atomic_write,
    ensure_private_dir,
    open_regular,
    read_nofollow,
)

COMPOSER_DIR = "cockpit"
LOCK_NAME = "composer.lock"
#: Sent messages kept per heinzel for ↑/↓, newest last.
HISTORY_LIMIT = 100
#: The most the history takes in the file (its messages as JSON strings); the oldest go first.
HISTORY_MAX_BYTES = 2 << 20
#: The largest composer file read back: the history, a text and an outgoing message at their
#: limits (``api.COMPOSER_TEXT_MAX_BYTES``, ``api.CHAT_MESSAGE_MAX_CHARS``) stay far below it.
MAX_FILE_BYTES = 8 << 20


def composer_path(root: Path, heinzel_id: str) -> Path:
    return root / COMPOSER_DIR / f"composer-{heinzel_id}.json"


def read_composer(root: Path, heinzel_id: str) -> api.ComposerText:
    """The saved composer, or an empty one at revision 0 when there is none yet.

    ``HZU229`` when the file is there but cannot be read back (too large, not
    JSON, not a composer, a link): its revision is unknown, so nothing may
    be saved over it.
    """
    path = composer_path(root, heinzel_id)
    try:
        raw = read_nofollow(path)
    except FileNotFoundError:
        return api.ComposerText(heinzel=heinzel_id)
    except OSError as exc:
        raise _unreadable(path, exc.strerror or type(exc).__name__) from None
    if len(raw) > MAX_FILE_BYTES:
        raise _unreadable(path, f"over {MAX_FILE_BYTES} bytes")
    try:
        saved = orjson.loads(raw)
        return api.ComposerText.model_validate({**saved, "heinzel": heinzel_id})
    except (orjson.JSONDecodeError, ValidationError, TypeError):
        raise _unreadable(path, "not a composer's JSON") from None


def update(
    root: Path,
    heinzel_id: str,
    change: Callable[[api.ComposerText], api.ComposerText | None],
) -> api.ComposerText:
    """Apply ``change`` to the composer under the lock; what is saved afterwards.

    ``change`` gets the current composer and returns the next one (its
    revision is set here, one past the current), or None to write nothing.
    Blocking: callers in an event loop run it in a thread. ``HZS081`` when the
    folder, the lock or the file cannot be written.
    """
    folder = root / COMPOSER_DIR
    path = composer_path(root, heinzel_id)
    try:
        ensure_private_dir(folder)
        fd = open_regular(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise _cannot_save(exc, path) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        current = read_composer(root, heinzel_id)
        following = change(current)
        if following is None:
            return current
        following = following.model_copy(
            update={"revision": current.revision + 1, "heinzel": heinzel_id}
        )
        data = orjson.dumps(following.model_dump(mode="json", exclude={"heinzel"}))
        try:
            atomic_write(path, data)
        except OSError as exc:
            raise _cannot_save(exc, path) from None
        return following
    finally:
        os.close(fd)


def remembered(history: list[str], message: str) -> list[str]:
    """``history`` with ``message`` as its newest entry (once, not twice in a row), bounded.

    At most ``HISTORY_LIMIT`` messages taking at most ``HISTORY_MAX_BYTES``
    as JSON: the oldest go first.
    """
    if history and history[-1] == message:
        return history
    kept: list[str] = []
    size = 0
    for entry in reversed([*history, message][-HISTORY_LIMIT:]):
        size += len(orjson.dumps(entry)) + 1
        if size > HISTORY_MAX_BYTES:
            break
        kept.append(entry)
    return kept[::-1]


def _unreadable(path: Path, why: str) -> HzError:
    return HzError(
        "HZU229",
        f"the composer's file cannot be read ({why}); nothing is saved over it: "
        "move it aside to start the composer again",
        str(path),
    )


def _cannot_save(exc: OSError, path: Path) -> HzError:
    return HzError("HZS081", f"cannot save the composer's text ({exc.strerror})", str(path))
