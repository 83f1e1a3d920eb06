"""Rejections the review desk holds for undo, on disk until the kernel has them.

The kernel has no "unreject" (the section is deleted and the spine records
it), so the honest undo is not sending. A held rejection is on disk
(``<home>/cockpit/held-rejects.json``) before the draft leaves the queue
and stays there until the kernel has it: leaving the desk or quitting sends
it at once, and a cockpit that died meanwhile sends it when it next starts,
only if the draft still waits (never twice, never over a later decision).
Each entry names the cockpit that holds it (pid and process start time):
another cockpit on the same home sends only entries whose holder is dead,
and every change to the file is a read-modify-write under an ``flock``.

Apart from the desk's rendering, so a cockpit's start (which claims what a
dead cockpit left) loads neither the diff code nor the review's models.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from hz_kernel import operations as ops
from hz_kernel.client import KernelClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_tui.files import locked, read_private, write_private
from hz_tui.link import NotConnected

HELD_FILE = "held-rejects.json"


class Owner(BaseModel):
    """The cockpit process holding a rejection: pid and start time (a reused pid is not it)."""

    model_config = ConfigDict(frozen=True)

    pid: int
    started: float

    @classmethod
    def me(cls) -> Owner:
        import psutil

        return cls(pid=os.getpid(), started=psutil.Process().create_time())

    def alive(self) -> bool:
        import psutil

        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < 1.0
        except psutil.Error:
            return False


class Held(BaseModel):
    """A rejection the user made and the kernel has not been sent yet."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    key: str
    name: str
    owner: Owner | None = None
    """The cockpit holding it; None in files written before owners were kept (left behind)."""

    def left_behind(self) -> bool:
        """Its cockpit ended without sending it."""
        return self.owner is None or not self.owner.alive()


class _HeldFile(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore")

    items: list[Held] = []


class HeldRejects:
    """The held rejections of one home (or one ``--connect`` connection), on disk."""

    def __init__(self, home: Home) -> None:
        self.path = home.root / "cockpit" / HELD_FILE
        self.lock = self.path.with_suffix(".lock")

    def load(self) -> list[Held]:
        """What is held; a file that cannot be read holds nothing (it is replaced on write)."""
        try:
            data = read_private(self.path)
            return [] if data is None else _HeldFile.model_validate_json(data).items
        except (OSError, ValidationError):
            return []

    def hold(self, key: str, name: str) -> None:
        """Hold a rejection as this cockpit's; ``HzError`` (HZU210) when it cannot be saved."""
        me = Owner.me()
        self._update(
            lambda items: [*(h for h in items if h.key != key), Held(key=key, name=name, owner=me)]
        )

    def release(self, key: str) -> bool:
        """Forget a rejection (undone, or the kernel has it); False when it was not held."""
        found = False

        def without(items: list[Held]) -> list[Held]:
            nonlocal found
            kept = [held for held in items if held.key != key]
            found = len(kept) != len(items)
            return kept

        self._update(without)
        return found

    def claim_left_behind(self) -> set[str]:
        """Make the rejections of cockpits that ended this one's, to send; their keys.

        A rejection another running cockpit holds is left alone: its undo is
        still open there. Claiming under the lock means two cockpits starting
        together never both send one.
        """
        if not self.load():
            return set()
        me = Owner.me()
        claimed: set[str] = set()

        def claim(items: list[Held]) -> list[Held]:
            claimed.update(held.key for held in items if held.left_behind())
            return [
                held.model_copy(update={"owner": me}) if held.key in claimed else held
                for held in items
            ]

        try:
            self._update(claim)
        except HzError:
            return set()
        return claimed

    def mine(self) -> list[Held]:
        """The rejections this process holds (its own and the left-behind ones it claimed)."""
        me = Owner.me()
        return [held for held in self.load() if held.owner == me]

    def _update(self, change: Callable[[list[Held]], list[Held]]) -> None:
        """Read, change and write the file under its lock: no other cockpit's entry is lost."""
        with locked(self.lock, code="HZU210", what="the held rejections"):
            before = self.load()
            after = change(before)
            if after != before:
                self._save(after)

    def _save(self, items: Sequence[Held]) -> None:
        if not items:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:
                raise HzError(
                    "HZU210", f"cannot remove it ({exc.strerror})", str(self.path)
                ) from None
            return
        data = orjson.dumps(_HeldFile(items=list(items)).model_dump())
        write_private(
            self.path, data, code="HZU210", what="the rejection to undo", make_folder=True
        )

    async def send(self, client: KernelClient, held: Held, *, again: bool = False) -> Sent:
        """Send one held rejection and say how it went.

        It is released once the kernel has it, or refused it (the refusal is
        the answer); while the kernel cannot be reached it stays held, to be
        sent when the link is back or the cockpit next starts. Sent ``again``
        (an earlier try found no kernel), it is first looked up: a daemon that
        died before answering may have rejected the draft already, and the
        kernel refuses a second reject (``HZU038``) which is then no failure.
        """
        try:
            if again and await _rejected_already(client, held.key):
                self.release(held.key)
                return Sent(held.key, f"{held.name}: draft rejected", "rejected")
            await client.call(ops.REJECT, ops.RejectRequest(ref=held.key))
        except NotConnected:
            return Sent(
                held.key,
                f"HZU240: {held.name}: reject waiting for the kernel (the daemon is away); "
                "it is sent once the daemon is back",
                "unreachable",
            )
        except HzError as exc:
            self.release(held.key)
            return Sent(held.key, f"{held.name}: {exc.one_line()}", "refused")
        self.release(held.key)
        return Sent(held.key, f"{held.name}: draft rejected", "rejected")

    async def send_mine(self, client: KernelClient, keys: Collection[str]) -> list[Sent]:
        """Send again the rejections among ``keys`` this cockpit still holds (a desk that closed
        while the kernel was away left them): the link is back."""
        return [
            await self.send(client, held, again=True) for held in self.mine() if held.key in keys
        ]

    async def send_left_behind(self, client: KernelClient, keys: Collection[str]) -> list[Sent]:
        """Send what a cockpit that ended early still held (``keys``, read at this cockpit's
        start), if the draft still waits; a rejection held since then has its own undo window.

        A draft no longer pending was decided meanwhile (or this rejection
        reached the kernel just before the end): nothing is sent for it.
        """
        items = [held for held in self.load() if held.key in keys]
        if not items:
            return []
        pending = {d.key for d in (await client.call(ops.DRAFTS, ops.Empty())).items}
        sent = []
        for held in items:
            if held.key in pending:
                sent.append(await self.send(client, held))
            else:
                self.release(held.key)
        return sent


async def _rejected_already(client: KernelClient, key: str) -> bool:
    """Whether the draft ``key`` is rejected (a reject sent before reached the kernel)."""
    try:
        found = await client.call(ops.REVIEW, ops.DraftKey(key=key))
    except NotConnected:
        raise
    except HzError:
        return False  # the reject itself says why it cannot be made
    return found.status == "rejected"


def unsent_note(home: Home) -> str | None:
    """The line a quitting cockpit leaves on stderr when rejections it held were not sent."""
    count = len(HeldRejects(home).mine())
    if not count:
        return None
    what = "rejection waits" if count == 1 else "rejections wait"
    return (
        f"HZU246: {count} {what} (the kernel could not be reached) "
        "and will be sent by the next cockpit on this home\n"
    )


@dataclass(frozen=True)
class Sent:
    """How sending one held rejection went: its draft, result line and outcome."""

    key: str
    line: str
    outcome: Literal["rejected", "refused", "unreachable"]

    @property
    def severity(self) -> Literal["information", "warning", "error"]:
        return _SEVERITY[self.outcome]


_SEVERITY: dict[str, Literal["information", "warning", "error"]] = {
    "rejected": "information",
    "unreachable": "warning",
    "refused": "error",
}
