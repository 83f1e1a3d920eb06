"""What the composer holds for one heinzel, kept on disk until the kernel has the message.

``<home>/cockpit/composer-<heinzel id>.json`` keeps the unsent text and mode,
so closing the cockpit loses nothing, and the message being sent with the
request id minted for it. The file is written before the message goes out:
when the acknowledgement is lost, sending again reuses the same id and the
kernel's inbox returns the message it already has instead of taking a second.
An acknowledgement clears only the message it acknowledges; text typed
meanwhile stays.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError
from ulid import ULID

from hz_kernel.home import Home
from hz_tui.files import read_private, write_private

Mode = Literal["steer", "queue"]
COMPOSER_DIR = "cockpit"


class Outgoing(BaseModel):
    """A message on its way to the kernel, with the id it keeps until acknowledged."""

    model_config = ConfigDict(frozen=True)

    request_id: str
    message: str
    mode: Mode


class ComposerState(BaseModel):
    """The composer of one heinzel: its text, its STEER/QUEUE mode, what is being sent."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    text: str = ""
    mode: Mode = "queue"
    outgoing: Outgoing | None = None

    @property
    def empty(self) -> bool:
        return not self.text and self.mode == "queue" and self.outgoing is None

    def sending(self) -> ComposerState:
        """The state to save before sending the text: its outgoing message and request id.

        The id is minted once per message; the same text in the same mode,
        sent again before an acknowledgement came, keeps the id it had.
        """
        message = self.text.strip()
        kept = self.outgoing
        if kept is not None and kept.message == message and kept.mode == self.mode:
            return self
        outgoing = Outgoing(request_id=f"cockpit-{ULID()}", message=message, mode=self.mode)
        return self.model_copy(update={"outgoing": outgoing})

    def acknowledged(self, request_id: str) -> ComposerState:
        """The kernel has ``request_id``: forget it, and the text if it is still that message."""
        sent = self.outgoing
        if sent is None or sent.request_id != request_id:
            return self
        text = "" if self.text.strip() == sent.message else self.text
        return self.model_copy(update={"outgoing": None, "text": text})


def composer_path(home: Home, heinzel_id: str) -> Path:
    return home.root / COMPOSER_DIR / f"composer-{home.heinzel_dir(heinzel_id).name}.json"


def load_composer(home: Home, heinzel_id: str) -> ComposerState:
    """The saved composer, or an empty one when there is none or it cannot be read."""
    try:
        raw = read_private(composer_path(home, heinzel_id))
    except OSError:
        return ComposerState()
    if raw is None:
        return ComposerState()
    try:
        return ComposerState.model_validate(orjson.loads(raw))
    except (orjson.JSONDecodeError, ValidationError):
        return ComposerState()


def save_composer(home: Home, heinzel_id: str, state: ComposerState) -> None:
    """Keep ``state`` on disk (an empty composer leaves no file); ``HZS081`` when impossible."""
    path = composer_path(home, heinzel_id)
    if state.empty:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    data = orjson.dumps(state.model_dump(mode="json"))
    write_private(path, data, code="HZS081", what="the composer's text", make_folder=True)
