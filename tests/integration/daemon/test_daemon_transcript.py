"""Issue 14 item 2: ``turn.transcript`` and ``heinzel.conversation`` answer the same on both heads.

A real daemon serves a home whose heinzel ran a turn (answering a message)
with the offline local model; the same reads through an embedded kernel
must give the same answers, so a cockpit attached with ``--connect`` (no
file access) shows the same transcript. An unknown turn is ``HZU200`` on both.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import Daemons, discovery

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.kernel import Kernel
from tests.support.homes import digest_contract, make_world

UNKNOWN_TURN = "01M8S00000000000000000000Z"


async def test_issue14_item2_transcript_and_conversation_agree_embedded_and_over_the_wire(
    tmp_path: Path, daemons: Daemons
) -> None:
    world = make_world(tmp_path)
    home = Home.resolve(world.home)
    kernel = await Kernel.open(home)
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    await kernel.chat(ref=made.id, message="group it by day", mode="queue", request_id="ask-1")
    await kernel.close()
    daemons.start(home)
    local = LocalClient(await Kernel.open(home))
    try:
        async with HttpClient(discovery(home)) as remote:
            answers = []
            for client in (local, remote):
                transcript = await client.call(
                    ops.TRANSCRIPT, ops.TranscriptRequest(ref="notes-digest")
                )
                conversation = await client.call(
                    ops.CONVERSATION, ops.HeinzelRef(ref="notes-digest")
                )
                with pytest.raises(HzError) as refused:
                    await client.call(
                        ops.TRANSCRIPT, ops.TranscriptRequest(ref=made.id, turn=UNKNOWN_TURN)
                    )
                assert refused.value.code == "HZU200"
                answers.append((transcript, conversation))
        (embedded, embedded_talk), (wire, wire_talk) = answers
        assert wire == embedded and wire_talk == embedded_talk
        assert wire.turn is not None and wire.present and not wire.expired
        kinds = [r["type"] for r in wire.records]
        assert {"input", "request", "context", "attempt", "messages", "outcome"} <= set(kinds)
        context = next(r for r in wire.records if r["type"] == "context")
        assert [p["part"] for p in context["parts"]] == ["framing", "contract"]
        assert context["labels"] == ["request", "situation", "inputs"]
        assert [(m.message, m.mode, m.route, m.turn) for m in wire_talk.items] == [
            ("group it by day", "queue", "queued", wire.turn)
        ]
        reread = await local.call(
            ops.TRANSCRIPT, ops.TranscriptRequest(ref=made.id, after_offset=wire.offset)
        )
        assert reread.records == [] and reread.offset == wire.offset
    finally:
        await local.close()
