"""Composer commands: the unsent message every window on a heinzel shares.

The kernel keeps it (``hz_kernel.store.composer``) rather than each
cockpit, so a window attached over the wire (``hz --connect``) and one on
the kernel's machine see the same text, and the revision check is one step
under a lock on the kernel's side: a window saves over the revision it last
saw, or is told the newer one instead of overwriting it.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from hz_kernel import api
from hz_kernel.core import KernelCore
from hz_kernel.store import composer as store


class ComposerCommands(KernelCore):
    """``composer.get``, ``composer.save``, ``composer.sent``."""

    async def composer(self, *, ref: str) -> api.ComposerText:
        heinzel_id = (await self.resolve(ref))["id"]
        return await asyncio.to_thread(store.read_composer, self.home.root, heinzel_id)

    async def composer_save(
        self,
        *,
        ref: str,
        base: int,
        text: str,
        mode: Literal["steer", "queue"],
        outgoing: api.ComposerOutgoing | None,
        window: str | None,
    ) -> api.ComposerSaved:
        heinzel_id = (await self.resolve(ref))["id"]
        saved = False

        def change(current: api.ComposerText) -> api.ComposerText | None:
            nonlocal saved
            if current.revision != base:
                return None
            saved = True
            update = {"text": text, "mode": mode, "outgoing": outgoing, "window": window}
            return current.model_copy(update=update)

        current = await asyncio.to_thread(store.update, self.home.root, heinzel_id, change)
        return api.ComposerSaved(saved=saved, current=current)

    async def composer_sent(
        self, *, ref: str, request_id: str, window: str | None
    ) -> api.ComposerText:
        """The inbox took ``request_id``: forget it, its text if still unchanged; remember it.

        A late answer clears only the message it answers: text typed meanwhile
        (in this window or another) stays.
        """
        heinzel_id = (await self.resolve(ref))["id"]

        def change(current: api.ComposerText) -> api.ComposerText | None:
            sent = current.outgoing
            if sent is None or sent.request_id != request_id:
                return None
            text = "" if current.text.strip() == sent.message else current.text
            return current.model_copy(
                update={
                    "outgoing": None,
                    "text": text,
                    "history": store.remembered(current.history, sent.message),
                    "window": window,
                }
            )

        return await asyncio.to_thread(store.update, self.home.root, heinzel_id, change)
