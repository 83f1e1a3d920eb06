"""issue 14 item 4: the composer's text on both heads, revision-checked on the kernel's side.

A window attached to the daemon (HTTP) and one with a kernel in its own
process (embedded) share one heinzel's unsent message: a save over an old
revision is refused with the newer text, never written, also when many
windows save over the same revision at once.
"""

from __future__ import annotations

import asyncio

from daemon_helpers import discovery

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.kernel import Kernel

REF = "h3"


def save(base: int, text: str, window: str, outgoing: dict[str, str] | None = None) -> ops.Req:
    return ops.ComposerSaveRequest.model_validate(
        {"ref": REF, "base": base, "text": text, "window": window, "outgoing": outgoing}
    )


async def test_issue14_item4_composer_revisions_on_both_heads(shared_home: Home) -> None:
    local = LocalClient(await Kernel.open(shared_home))
    try:
        async with HttpClient(discovery(shared_home)) as remote:
            start = await remote.call(ops.COMPOSER, ops.HeinzelRef(ref=REF))
            assert start == await local.call(ops.COMPOSER, ops.HeinzelRef(ref=REF))
            base = start.revision

            first = await local.call(ops.COMPOSER_SAVE, save(base, "from here\nline 2", "w-a"))
            assert first.saved and first.current.revision == base + 1
            stale = await remote.call(ops.COMPOSER_SAVE, save(base, "from afar", "w-b"))
            assert not stale.saved
            assert stale.current.text == "from here\nline 2" and stale.current.window == "w-a"
            kept = await remote.call(ops.COMPOSER, ops.HeinzelRef(ref=REF))
            assert kept.text == "from here\nline 2", "the stale save wrote nothing"

            racing = await asyncio.gather(
                *(
                    client.call(ops.COMPOSER_SAVE, save(base + 1, f"racer {n}", f"w-{n}"))
                    for n, client in enumerate([local, remote] * 5)
                )
            )
            won = [answer for answer in racing if answer.saved]
            assert len(won) == 1, "one save per revision, however many windows try"
            after = await local.call(ops.COMPOSER, ops.HeinzelRef(ref=REF))
            assert after.revision == base + 2 and after.text == won[0].current.text

            outgoing = {"request_id": "cockpit-r1", "message": "send me", "mode": "steer"}
            sending = await remote.call(
                ops.COMPOSER_SAVE, save(after.revision, "send me", "w-b", outgoing)
            )
            assert sending.saved and sending.current.outgoing is not None
            other = ops.ComposerSentRequest(ref=REF, request_id="cockpit-other", window="w-b")
            assert (await local.call(ops.COMPOSER_SENT, other)) == sending.current
            sent = ops.ComposerSentRequest(ref=REF, request_id="cockpit-r1", window="w-b")
            cleared = await local.call(ops.COMPOSER_SENT, sent)
            assert (cleared.text, cleared.outgoing, cleared.mode) == ("", None, "queue")
            assert cleared.history[-1] == "send me"
            assert await remote.call(ops.COMPOSER, ops.HeinzelRef(ref=REF)) == cleared
    finally:
        await local.close()
