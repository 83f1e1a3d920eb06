"""issue 14 item 4: the composer's text on both heads, revision-checked on the kernel's side.

A window attached to the daemon (HTTP) and one with a kernel in its own
process (embedded) share one heinzel's unsent message: a save over an old
revision is refused with the newer text, never written, also when many
windows save over the same revision at once.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from daemon_helpers import discovery

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.daemon.protocol import OP_PREFIX, PROTOCOL_HEADER, PROTOCOL_VERSION
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.kernel import Kernel
from hz_kernel.store.composer import MAX_FILE_BYTES, composer_path

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


def _headers(home: Home) -> dict[str, str]:
    found = discovery(home)
    return {"authorization": f"Bearer {found.token}", PROTOCOL_HEADER: str(PROTOCOL_VERSION)}


async def test_issue14_item4_composer_save_is_strict_and_fits_the_body_cap(
    shared_home: Home,
) -> None:
    """The wire takes a revision only as a JSON integer a revision can be; the outgoing message
    obeys ``heinzel.chat``'s limits (else ``composer.sent`` could never clear it); the text's
    limit is in bytes, and a text and an outgoing message at their limits fit one request."""
    ref = "h2"
    address = discovery(shared_home).address
    async with (
        httpx.AsyncClient(base_url=address, trust_env=False, timeout=30) as raw,
        HttpClient(discovery(shared_home)) as remote,
    ):
        base = (await remote.call(ops.COMPOSER, ops.HeinzelRef(ref=ref))).revision
        good = {"ref": ref, "base": base, "text": "hi", "window": "w-strict"}
        bad_fields = [
            ({"base": str(base)}, "base"),
            ({"base": 10**25}, "base"),
            ({"base": 1.0}, "base"),
            ({"outgoing": {"request_id": "../../x y", "message": "hi", "mode": "queue"}}, None),
            ({"outgoing": {"request_id": "a" * 100_000, "message": "hi", "mode": "queue"}}, None),
            ({"outgoing": {"request_id": "r1", "message": "", "mode": "queue"}}, None),
            ({"outgoing": {"request_id": "r1", "message": "x" * 65537, "mode": "queue"}}, None),
            ({"text": "\U0001f600" * (128 * 1024)}, "text"),
        ]
        for change, place in bad_fields:
            refused = await raw.post(
                OP_PREFIX + "composer.save", json=good | change, headers=_headers(shared_home)
            )
            assert refused.status_code == 422, (change.keys(), refused.text[:200])
            assert refused.json()["code"] == "HZD010"
            assert refused.json()["place"].startswith(place or "outgoing")
        assert (await remote.call(ops.COMPOSER, ops.HeinzelRef(ref=ref))).revision == base

        widest = "\U0001f600" * (128 * 1024 - 1)
        message = "\U0001f600" * (64 * 1024)
        outgoing = {"request_id": "cockpit-wide", "message": message, "mode": "steer"}
        fits = await remote.call(ops.COMPOSER_SAVE, save_to(ref, base, widest, outgoing))
        assert fits.saved and fits.current.text == widest


def save_to(ref: str, base: int, text: str, outgoing: dict[str, str] | None) -> ops.Req:
    return ops.ComposerSaveRequest.model_validate(
        {"ref": ref, "base": base, "text": text, "window": "w-strict", "outgoing": outgoing}
    )


async def test_issue14_item4_composer_history_stays_bounded_and_a_damaged_file_is_reported(
    shared_home: Home,
) -> None:
    """Many long messages sent keep the newest history and the revision counting on (the file
    never reaches the size it is read back at); a damaged file is refused with HZU229 on both
    heads and nothing is saved over it."""
    ref = "h1"
    local = LocalClient(await Kernel.open(shared_home))
    long = "漢" * (64 * 1024)
    messages = [f"{n} {long}"[: 64 * 1024] for n in range(45)]
    first = await local.call(ops.COMPOSER, ops.HeinzelRef(ref=ref))
    revision, path = first.revision, composer_path(shared_home.root, first.heinzel)
    try:
        for n, message in enumerate(messages):
            outgoing = {"request_id": f"cockpit-{n}", "message": message, "mode": "queue"}
            saved = await local.call(ops.COMPOSER_SAVE, save_to(ref, revision, message, outgoing))
            assert saved.saved and saved.current.revision == revision + 1
            sent = ops.ComposerSentRequest(ref=ref, request_id=f"cockpit-{n}")
            revision = (await local.call(ops.COMPOSER_SENT, sent)).revision
            kept = await local.call(ops.COMPOSER, ops.HeinzelRef(ref=ref))
            assert kept.revision == revision == saved.current.revision + 1, "never starts again"
        assert 5 <= len(kept.history) < 45, "the oldest went, the newest stay"
        assert kept.history == messages[-len(kept.history) :]
        assert path.stat().st_size < MAX_FILE_BYTES // 2

        path.write_bytes(b'{"revision": 7, "text": ')
        async with HttpClient(discovery(shared_home)) as remote:
            for client in (local, remote):
                with pytest.raises(HzError) as unreadable:
                    await client.call(ops.COMPOSER, ops.HeinzelRef(ref=ref))
                assert unreadable.value.code == "HZU229"
                with pytest.raises(HzError) as refused:
                    await client.call(ops.COMPOSER_SAVE, save_to(ref, 0, "over it", None))
                assert refused.value.code == "HZU229"
        assert path.read_bytes() == b'{"revision": 7, "text": ', "nothing was written over it"
    finally:
        path.unlink(missing_ok=True)
        await local.close()
