"""Composer text the kernel had not taken when its page closed, kept on this machine.

The kernel keeps a heinzel's unsent message (``composer.save``), but a
cockpit that closes while its daemon is away cannot hand it over. Rather
than lose it, the page writes it to ``<home>/cockpit/unsent-<id>.json``
(private, replaced atomically) before it tries the kernel, and forgets it
once the kernel has it. The next page on that heinzel — in this cockpit or
the next one started — shows it again and saves it to the kernel, meeting
any newer text there as any save does.
"""

from __future__ import annotations

import contextlib

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from hz_kernel.api import ComposerText
from hz_kernel.home import Home
from hz_tui.composer_store import ComposerState
from hz_tui.files import read_private, write_private


class Kept(BaseModel):
    """One heinzel's unsaved composer: the revision it was typed over, the text, the window."""

    model_config = ConfigDict(extra="ignore")

    base: ComposerText
    state: ComposerState
    window: str


class KeptComposer:
    """One heinzel's unsaved composer on disk, for one home (or one ``--connect`` connection)."""

    def __init__(self, home: Home, heinzel_id: str) -> None:
        self.path = home.root / "cockpit" / f"unsent-{heinzel_id}.json"

    def load(self) -> Kept | None:
        """What is kept; a file that cannot be read keeps nothing (it is replaced on write)."""
        try:
            data = read_private(self.path)
            return None if data is None else Kept.model_validate_json(data)
        except (OSError, ValidationError):
            return None

    def keep(self, kept: Kept) -> None:
        """Keep the text; raises ``HzError`` (HZU235) when it cannot be written."""
        data = orjson.dumps(kept.model_dump(mode="json"))
        write_private(self.path, data, code="HZU235", what="the unsent message", make_folder=True)

    def release(self) -> None:
        """Forget the text: the kernel has it (a folder that is not one kept nothing)."""
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            self.path.unlink()
