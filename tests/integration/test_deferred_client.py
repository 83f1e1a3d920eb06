"""The cockpit's embedded client: listings from the index until the kernel is needed.

``DeferredClient`` may answer ``heinzel.list`` without the kernel only when
the index provably matches every spine; the answer must equal the kernel's
own. Anything else opens the kernel first. And the ``hz`` command's start-up
path must not load the kernel (or the HTTP stack) at all.
"""

from __future__ import annotations

import subprocess
import sys

from hz_kernel import operations as ops
from hz_kernel.client import DeferredClient
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import HeinzelPaused


async def _two_heinzels(home: Home) -> tuple[str, str]:
    kernel = await Kernel.open(home)
    try:
        ids = []
        for name in ("alpha", "beta"):
            params = {"name": name, "section": name}  # one heinzel per asset
            made = await kernel.new(template="weekly-report", params=params)
            await kernel.approve(ref=made.id)
            ids.append(made.id)
    finally:
        await kernel.close()
    return ids[0], ids[1]


async def test_a_current_index_answers_the_listing_without_the_kernel(home: Home) -> None:
    await _two_heinzels(home)
    kernel = await Kernel.open(home)
    try:
        expected = await kernel.list_heinzels()
    finally:
        await kernel.close()
    client = DeferredClient(home)
    try:
        listed = await client.call(ops.LIST, ops.ListRequest())
        assert listed == expected and not client.opened.is_set()
        alpha = next(item.id for item in listed.items if item.name == "alpha")
        one = await client.call(ops.LIST, ops.ListRequest(ids=[alpha]))
        assert [item.name for item in one.items] == ["alpha"] and not client.opened.is_set()
        shown = await client.call(ops.SHOW, ops.HeinzelRef(ref="alpha"))
        assert shown.heinzel.name == "alpha" and client.opened.is_set()
    finally:
        await client.close()


async def test_a_spine_ahead_of_the_index_makes_the_listing_wait_for_the_kernel(
    home: Home,
) -> None:
    alpha, _ = await _two_heinzels(home)
    with SpineWriter.open(home.heinzel_dir(alpha)) as writer:
        writer.append(HeinzelPaused())
    client = DeferredClient(home)
    try:
        listed = await client.call(ops.LIST, ops.ListRequest())
        assert client.opened.is_set()
        assert {item.name: item.state for item in listed.items}["alpha"] == "paused"
    finally:
        await client.close()


async def test_no_index_yet_and_warm_both_open_the_kernel(home: Home) -> None:
    client = DeferredClient(home, long_lived=True)
    try:
        assert (await client.call(ops.LIST, ops.ListRequest())).items == []
        assert client.opened.is_set() and client.kernel.long_lived
    finally:
        await client.close()
    await _two_heinzels(home)
    warmed = DeferredClient(home)
    try:
        await warmed.warm()
        assert warmed.opened.is_set()
        assert (await warmed.status()).embedded and (await warmed.status()).heinzels == 2
    finally:
        await warmed.close()


def test_the_cockpit_starts_without_the_kernel_the_event_models_or_the_http_stack() -> None:
    probe = (
        "import sys, hz_kernel.cli, hz_kernel.connect, hz_tui.app, hz_tui.entry;"
        "heavy = [m for m in ('hz_kernel.kernel', 'hz_kernel.engine.runner', 'httpx',"
        " 'hz_kernel.commands.tick', 'pydantic_ai', 'hz_kernel.vocabulary',"
        " 'hz_kernel.store.projection', 'hz_kernel.daemon.feed') if m in sys.modules];"
        "print(heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
