"""Inbox request files: ``inbox/<request id>.json``, a message on disk before anything acts.

A request (a chat message, an answer, a wake) is admitted by writing its
file atomically and exclusively: the first admission with an id wins, a
retry with the same id gets the same request back and never becomes a
second message. Which requests were delivered is recorded in the spine
(``turn.steered``, ``turn.requested``, ``question.answered``); a request
with a file and no such event is still pending, including after a crash.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import (
    NotRegularFile,
    create_exclusive,
    ensure_private_dir,
    read_nofollow,
    store_error,
    store_io,
)

REQUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
REQUEST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.json$")
MAX_MESSAGE = 64 * 1024

RequestKind = Literal["chat", "answer", "wake", "resume", "retry", "approve", "reject"]


class InboxRequest(BaseModel):
    """One admitted request. Holds the user's text, so it lives here and never in the spine."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    request_id: str
    heinzel: str
    kind: RequestKind = "chat"
    mode: Literal["steer", "queue"] = "queue"
    message: str = Field(default="", max_length=MAX_MESSAGE)
    question_key: str | None = None
    admitted_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def check_request_id(request_id: str) -> str:
    if not REQUEST_ID.match(request_id):
        raise HzError(
            "HZS030", "a request id is 1-64 letters, digits, '-' or '_'", repr(request_id)[:80]
        )
    return request_id


class Inbox:
    """The inbox folder of one heinzel."""

    def __init__(self, heinzel_dir: Path) -> None:
        self.dir = heinzel_dir / "inbox"

    def admit(self, request: InboxRequest) -> tuple[InboxRequest, bool]:
        """Write the request unless its id is taken; returns the stored request and whether new."""
        check_request_id(request.request_id)
        path = self.dir / f"{request.request_id}.json"
        with store_io(path):
            ensure_private_dir(self.dir)
            created = create_exclusive(path, request.model_dump_json().encode())
        if created:
            return request, True
        stored = self.get(request.request_id)
        if stored is None:
            raise HzError("HZS031", "request file exists but cannot be read", str(path))
        return stored, False

    def get(self, request_id: str) -> InboxRequest | None:
        """The stored request; an entry that is a FIFO, socket or device is refused (HZS090)."""
        if not REQUEST_ID.match(request_id):
            return None
        path = self.dir / f"{request_id}.json"
        try:
            raw = read_nofollow(path)
            return InboxRequest.model_validate_json(raw)
        except NotRegularFile as exc:
            raise store_error(exc, path) from None
        except (OSError, ValidationError):
            return None

    def all(self) -> list[InboxRequest]:
        """Every readable request, oldest admission first."""
        if not self.dir.is_dir():
            return []
        found = [
            request
            for name in sorted(p.name for p in self.dir.iterdir())
            if REQUEST_NAME.match(name)
            and (request := self.get(name.removesuffix(".json"))) is not None
        ]
        return sorted(found, key=lambda r: (r.admitted_at, r.request_id))
