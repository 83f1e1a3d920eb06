"""The composer's file: a heinzel's unsent message, its mode, its history, under a revision.

``<home>/cockpit/composer-<heinzel id>.json`` holds what a user is typing to
one heinzel, whichever window (a local cockpit, one attached with
``--connect``) types it. Every change goes through ``update`` under one
``flock`` (``<home>/cockpit/composer.lock``), so reading the revision,
checking it and writing the next one are a single step for every thread and
process on the home: two windows can never both write over the same
revision. The file is never deleted (its revision would start again at
0 and a stale window's old revision could match a new text); files written
before revisions existed read as revision 0.
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
#: The largest composer file read back (a text is at most 256 KiB, the history a little more).
MAX_FILE_BYTES = 8 << 20


def composer_path(root: Path, heinzel_id: str) -> Path:
    return root / COMPOSER_DIR / f"composer-{heinzel_id}.json"


def read_composer(root: Path, heinzel_id: str) -> api.ComposerText:
    """The saved composer, or an empty one at revision 0 when there is none or it is unreadable."""
    path = composer_path(root, heinzel_id)
    try:
        raw = read_nofollow(path)
    except OSError:
        return api.ComposerText(heinzel=heinzel_id)
    if len(raw) > MAX_FILE_BYTES:
        return api.ComposerText(heinzel=heinzel_id)
    try:
        saved = orjson.loads(raw)
        return api.ComposerText.model_validate({**saved, "heinzel": heinzel_id})
    except (orjson.JSONDecodeError, ValidationError, TypeError):
        return api.ComposerText(heinzel=heinzel_id)


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
    """``history`` with ``message`` as its newest entry (once, not twice in a row), bounded."""
    if history and history[-1] == message:
        return history
    return [*history, message][-HISTORY_LIMIT:]


def _cannot_save(exc: OSError, path: Path) -> HzError:
    return HzError("HZS081", f"cannot save the composer's text ({exc.strerror})", str(path))
