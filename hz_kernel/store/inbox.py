"""Inbox request files: ``inbox/<request id>.json``, a message on disk before anything acts.

A request (a chat message, an answer, a wake) is admitted by writing its
file atomically and exclusively: the first admission with an id wins, a
retry with the same id and the same content gets the same request back and
never becomes a second message, and the same id with other content is
refused (``HZS034``). Which requests were delivered is recorded in the spine
(``turn.steered``, ``turn.requested``, ``turn.started``,
``question.answered``); a request with a file and no such event is still
pending, including after a crash. A wake the spine's own process admits is
written without fsync: its ``turn.started`` makes it durable, or its file
is synced before the wake is answered (``settle``; docs/format.md, Inbox).

Before its file is written, an admission also leaves a marker named by the
heinzel's id in ``<home>/heinzel/undelivered/``. The tick lists that one
folder and delivers the inbox of each heinzel found there, so a message
admitted while another process held the spine (or before a crash) waits
for the next tick, not for the heinzel's next turn. The deliverer removes
the marker under the spine's lock before it reads the inbox, so a message
admitted meanwhile leaves a new marker and is never stranded. Markers are
not fsynced; the first tick of a process marks again every inbox that
holds a request file (``remark_pending``), which finds a marker lost to a
power cut.

A request a turn took (the spine says so: ``turn.started``, ``turn.steered``,
``question.answered``, ``turn.requested``) is moved into ``inbox/delivered/``
the next time a turn looks for new ones (``pending``), so that look reads
only what may be new and costs the same after ten thousand messages as
after ten. The move is not fsynced: the spine, not the folder, says what
was delivered, so a move lost in a crash is done again. It never replaces
a file already aside under that id, and an admission that finds its id set
aside just after writing it (a turn raced the retry) removes its own file.
Every other reader (``get``, ``all``, ``scan``) sees both folders; a
``delivered`` that is no real folder (a link to elsewhere, a file) is never
read, written or pruned through.

A stop that hands messages back (the cockpit's) withdraws them: each file
is renamed into ``inbox/withdrawn/`` (atomic, the folders fsynced), so no
turn takes it and its text is never deleted; an id once withdrawn is not
admitted again (``HZS098``), the user sends the text under a new one.

An ``operation`` request is a whole command (stop, pause, approve, …) that
found the spine held by another process (``hz_kernel.held``): the next
tick performs it and then removes its file (``consume``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import re
import stat
from collections.abc import Container
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hz_kernel import crashpoints
from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import (
    FILE_MODE,
    NotRegularFile,
    create_exclusive,
    ensure_private_dir,
    fsync_dir,
    fsync_file,
    read_nofollow,
    store_error,
    store_io,
)

#: What a request id may be; the wire's request models check the same pattern.
REQUEST_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
REQUEST_ID = re.compile(REQUEST_ID_PATTERN)
REQUEST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.json$")
MAX_MESSAGE = 64 * 1024
UNDELIVERED_DIR = "undelivered"
WITHDRAWN_DIR = "withdrawn"
DELIVERED_DIR = "delivered"
MARKER_NAME = re.compile(r"^hz-[0-9A-HJKMNP-TV-Z]{26}$")

_log = logging.getLogger("hz.inbox")
#: The skipped entries already logged by this process (a daemon reads an inbox every turn).
_REPORTED: set[str | None] = set()

RequestKind = Literal["chat", "answer", "wake", "resume", "retry", "approve", "reject", "operation"]


class InboxRequest(BaseModel):
    """One admitted request. Holds the user's text, so it lives here and never in the spine."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    request_id: str
    heinzel: str
    kind: RequestKind = "chat"
    mode: Literal["steer", "queue"] = "queue"
    message: str = Field(default="", max_length=MAX_MESSAGE)
    question_key: str | None = None
    operation: str | None = None
    """An ``operation`` request's operation (its wire name, e.g. ``heinzel.stop``)."""
    arguments: dict[str, Any] = {}
    """An ``operation`` request's request, as the operation's model dumps it."""
    admitted_at: datetime = Field(default_factory=now_utc)

    def same_content(self, other: InboxRequest) -> bool:
        """Whether ``other`` asks for the same thing (the admission time aside)."""
        return self.model_dump(exclude={"admitted_at"}) == other.model_dump(exclude={"admitted_at"})


def check_request_id(request_id: str) -> str:
    if not REQUEST_ID.match(request_id):
        raise HzError(
            "HZS030", "a request id is 1-64 letters, digits, '-' or '_'", repr(request_id)[:80]
        )
    return request_id


def remark_pending(heinzel_root: Path) -> int:
    """Mark every inbox that holds a request file; returns how many markers this made.

    Markers are not fsynced (a wake would pay for one more folder fsync each
    time), so a power cut may lose one whose request file it kept. The first
    tick of each process calls this to find such requests again: a request
    file in the inbox's top folder is pending or just taken, and a marker
    with nothing pending behind it costs one spine read.
    """
    made = 0
    try:
        entries = os.scandir(heinzel_root)
    except OSError:
        return 0
    marked = undelivered(heinzel_root)
    with entries:
        for entry in entries:
            if entry.name in marked or not MARKER_NAME.match(entry.name):
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            inbox = Inbox(Path(entry.path))
            if _holds_request(inbox.dir):
                # Best effort: a marker that cannot be made now fails the next admission
                # loudly; it must not stop the tick.
                with contextlib.suppress(OSError):
                    inbox.mark()
                    made += 1
    return made


def _holds_request(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(REQUEST_NAME.match(entry.name) for entry in entries)
    except OSError:
        return False


def undelivered(heinzel_root: Path) -> set[str]:
    """The ids of heinzels whose inbox may hold a request no turn has taken yet."""
    try:
        names = os.listdir(heinzel_root / UNDELIVERED_DIR)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    return {name for name in names if MARKER_NAME.match(name)}


class Inbox:
    """The inbox folder of one heinzel (``<home>/heinzel/<id>/inbox``)."""

    def __init__(self, heinzel_dir: Path) -> None:
        self.dir = heinzel_dir / "inbox"
        self._heinzel_dir = heinzel_dir

    @functools.cached_property
    def marker(self) -> Path:
        """The undelivered marker: made only when asked, since most uses never touch it and a
        turn makes an Inbox several times."""
        return self._heinzel_dir.parent.joinpath(UNDELIVERED_DIR, self._heinzel_dir.name)

    def admit(self, request: InboxRequest, *, durable: bool = True) -> tuple[InboxRequest, bool]:
        """Write the request unless its id is taken; returns the stored request and whether new.

        A taken id answers with the stored request when it asks the same, and
        is refused (``HZS034``) when it asks something else: the first request
        would be answered for the second, whose content would reach no turn.
        ``durable=False``: the caller makes it durable (``settle``) before it
        answers, unless the spine records the request first.
        """
        check_request_id(request.request_id)
        path = self.dir / f"{request.request_id}.json"
        if self.withdrawn(request.request_id):
            raise HzError(
                "HZS098",
                f"request id {request.request_id!r} was withdrawn by a stop that handed its "
                "message back; send it again under a new id",
                str(path),
            )
        with store_io(path):
            ensure_private_dir(self.dir)
            stored = self.get(request.request_id)
            if stored is None:
                self.mark()
                if create_exclusive(path, request.model_dump_json().encode(), durable=durable):
                    crashpoints.reached("inbox:admitted")
                    stored = self._aside(request.request_id)
                    if stored is None:
                        return request, True
                    # Taken and set aside between the look above and this write (a turn
                    # raced this retry): the first admission stands, this file goes.
                    os.unlink(path)
                    fsync_dir(self.dir)
                stored = self.get(request.request_id)
        if stored is None:
            raise HzError("HZS031", "request file exists but cannot be read", str(path))
        if not stored.same_content(request):
            raise HzError(
                "HZS034",
                f"request id {request.request_id!r} was already used for another "
                f"{stored.kind} request; use a new id",
                str(path),
            )
        return stored, False

    def settle(self, request_id: str) -> None:
        """Make a request admitted with ``durable=False`` durable (gone from the folder: a turn
        set it aside, so the spine recorded it)."""
        path = self.dir / f"{request_id}.json"
        with store_io(path), contextlib.suppress(FileNotFoundError):
            fsync_file(path)

    def mark(self) -> None:
        """Leave the marker that makes the next tick deliver this inbox (not fsynced: see
        ``remark_pending``)."""
        ensure_private_dir(self.marker.parent)
        if not self.marker.exists():
            os.close(os.open(self.marker, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))

    def unmark(self) -> None:
        """Remove the marker; call it under the spine's lock, before reading what is pending."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.marker)

    def consume(self, request_id: str) -> None:
        """Remove a request that has been carried out (an ``operation`` request)."""
        path = self.dir / f"{check_request_id(request_id)}.json"
        with store_io(path), contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            fsync_dir(self.dir)

    def withdraw(self, requests: list[InboxRequest]) -> list[InboxRequest]:
        """Move these requests aside so no turn takes them; returns those moved.

        Each file is renamed into ``withdrawn/`` (kept, never deleted) and
        the crash point ``inbox:withdrawn`` is reached once per file made
        durable: a request is either still in the inbox (a turn takes it)
        or aside (none ever does), never both and never neither.
        """
        aside = self.dir / WITHDRAWN_DIR
        moved: list[InboxRequest] = []
        with store_io(aside):
            ensure_private_dir(aside)
            if not stat.S_ISDIR(os.lstat(aside).st_mode):
                raise HzError(
                    "HZS090",
                    "refused: not a directory (a symbolic link, a file or a special entry); "
                    "nothing was withdrawn",
                    str(aside),
                )
            for request in requests:
                name = f"{check_request_id(request.request_id)}.json"
                for folder in self._folders():
                    try:
                        os.rename(folder / name, aside / name)
                        break
                    except FileNotFoundError:
                        continue
                else:
                    continue
                fsync_dir(aside)
                fsync_dir(folder)
                crashpoints.reached("inbox:withdrawn")
                moved.append(request)
        return moved

    def withdrawn(self, request_id: str) -> bool:
        """Whether a stop withdrew this request (its text is in ``withdrawn/``)."""
        if not REQUEST_ID.match(request_id):
            return False
        return (self.dir / WITHDRAWN_DIR / f"{request_id}.json").exists()

    def get(self, request_id: str) -> InboxRequest | None:
        """The stored request, delivered or not; an entry that is a FIFO, socket or device is
        refused (HZS090)."""
        if not REQUEST_ID.match(request_id):
            return None
        name = f"{request_id}.json"
        return next(
            (found for folder in self._folders() if (found := self._read(folder / name))), None
        )

    def _aside(self, request_id: str) -> InboxRequest | None:
        """The request set aside in ``delivered/`` under this id, if any."""
        folders = self._folders()
        return self._read(folders[1] / f"{request_id}.json") if len(folders) > 1 else None

    def _folders(self) -> list[Path]:
        """The inbox, then ``delivered/`` if it is a real folder (never a link to elsewhere)."""
        delivered = self.dir / DELIVERED_DIR
        try:
            real = stat.S_ISDIR(os.lstat(delivered).st_mode)
        except OSError:
            real = False
        return [self.dir, delivered] if real else [self.dir]

    def files(self, request_id: str) -> list[Path]:
        """The paths this request's file may have (where ``prune`` looks)."""
        return [folder / f"{check_request_id(request_id)}.json" for folder in self._folders()]

    @staticmethod
    def _read(path: Path) -> InboxRequest | None:
        try:
            return Inbox._read_entry(path)
        except HzError as exc:
            if exc.code != "HZS031":
                raise
            return None

    @staticmethod
    def _read_entry(path: Path) -> InboxRequest | None:
        """The request in ``path``; None when it is gone or a link (never followed). A special
        file is refused (HZS090), a damaged one too (HZS031: not a request, or one under
        another id, which no turn could ever mark delivered)."""
        try:
            request = InboxRequest.model_validate_json(read_nofollow(path))
        except NotRegularFile as exc:
            raise store_error(exc, path) from None
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise HzError("HZS031", f"cannot read it ({exc.strerror})", str(path)) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the file"
            raise HzError("HZS031", f"damaged: {where}: {first['msg']}", str(path)) from None
        if f"{request.request_id}.json" != path.name:
            raise HzError("HZS031", f"damaged: it holds request {request.request_id!r}", str(path))
        return request

    def all(self) -> list[InboxRequest]:
        """Every readable request, delivered or not, oldest admission first.

        An entry that is no regular file (a directory, FIFO, socket or device
        named like a request) is skipped, never read, and logged once per
        process (HZS090): one stray entry must not keep the other messages
        from their turns. ``scan`` says which entries were skipped.
        """
        return _logged(self.scan())

    def pending(self, taken: Container[str]) -> list[InboxRequest]:
        """The requests no turn took yet, oldest admission first.

        ``taken`` holds the ids the spine says a turn took (the projection's
        requests): their files are moved into ``delivered/``, unread, so the
        next look lists only what may be new.
        """
        found, refused = self._scan_folder(self.dir, taken)
        return _logged((found, refused))

    def scan(self) -> tuple[list[InboxRequest], list[HzError]]:
        """Every readable request, delivered or not, oldest admission first, and the entries
        refused as not regular files (a directory, FIFO, socket or device named like a
        request): HZS090, or as damaged: HZS031."""
        found: dict[str, InboxRequest] = {}
        refused: list[HzError] = []
        for folder in self._folders():
            requests, skipped = self._scan_folder(folder, ())
            for request in requests:
                found.setdefault(request.request_id, request)
            refused += skipped
        return sorted(found.values(), key=lambda r: (r.admitted_at, r.request_id)), refused

    def _scan_folder(
        self, folder: Path, taken: Container[str]
    ) -> tuple[list[InboxRequest], list[HzError]]:
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        found: list[InboxRequest] = []
        refused: list[HzError] = []
        delivered: list[str] = []
        for name in names:
            if not REQUEST_NAME.match(name):
                continue
            if name[:-5] in taken:
                delivered.append(name)
                continue
            try:
                request = self._read_entry(folder / name)
            except HzError as exc:
                if exc.code not in ("HZS090", "HZS031"):
                    raise
                refused.append(exc)
                continue
            if request is not None:
                found.append(request)
        if delivered:
            self._set_aside(delivered)
        return sorted(found, key=lambda r: (r.admitted_at, r.request_id)), refused

    def _set_aside(self, names: list[str]) -> None:
        """Move delivered requests out of the way of the next look; best effort (see above)."""
        aside = self.dir / DELIVERED_DIR
        try:
            ensure_private_dir(aside)
            if not stat.S_ISDIR(os.lstat(aside).st_mode):
                return
            for name in names:
                with contextlib.suppress(FileNotFoundError):
                    if stat.S_ISREG(os.lstat(self.dir / name).st_mode):
                        _move_unless_there(self.dir / name, aside / name)
        except OSError as exc:
            key = f"aside:{self.dir}"
            if key not in _REPORTED:
                _REPORTED.add(key)
                _log.info("HZS090: %s: delivered requests stay where they are (%s)", aside, exc)


def _move_unless_there(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target`` unless ``target`` exists: a request file already aside
    under that name keeps its text (a crash between the link and the unlink left two names
    of one file, which this finishes)."""
    try:
        os.link(source, target)
    except FileExistsError:
        there, here = os.lstat(target), os.lstat(source)
        if (there.st_dev, there.st_ino) != (here.st_dev, here.st_ino):
            return
    os.unlink(source)


def _logged(scanned: tuple[list[InboxRequest], list[HzError]]) -> list[InboxRequest]:
    """The requests found; each refused entry logged once per process."""
    found, refused = scanned
    for exc in refused:
        if exc.place not in _REPORTED:
            _REPORTED.add(exc.place)
            _log.info("%s; skipped", exc.one_line())
    return found
