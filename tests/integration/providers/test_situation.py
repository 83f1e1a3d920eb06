"""Issue 15 item 4: the model sees what it may wait on, and a wait must name one of those.

A real provider's wire (OpenAI Chat Completions, ``tests/support/wire``): the
first turn places a draft; the second is shown the draft's key, why it woke
and the inputs' fingerprints, answers with a wait on a key that does not
exist, is told which keys do, and waits on the real one.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.support.wire.providers import DRAFT, NOW, PROVIDERS, events, heinzel_on
from tests.support.wire.server import ToolCall

CHAT = next(p for p in PROVIDERS if p.name == "openai-chat")


def _wait_on(key: str) -> ToolCall:
    return ToolCall("wait", {"on": {"kind": "approval", "key": key}, "report": "waiting for you"})


def test_issue15_item4_a_wait_must_name_a_key_the_turn_was_shown(tmp_path: Path) -> None:
    with CHAT.stub([ToolCall("draft", DRAFT)]) as stub:
        world, heinzel_id = heinzel_on(tmp_path, CHAT.spec(stub))
        world.hz("heinzel", "wake", "notes-digest", HZ_NOW=NOW, **CHAT.env(stub))
    (key,) = [str(d["key"]) for d in events(world, heinzel_id, "draft.placed")]
    fingerprints = {
        str(i["name"]): str(i["fingerprint"])
        for d in events(world, heinzel_id, "step.done")
        for i in d.get("inputs", [])  # type: ignore[attr-defined]
    }
    with CHAT.stub([_wait_on("hz-no-such-draft"), _wait_on(key)]) as stub:
        wake = world.hz("heinzel", "wake", "notes-digest", "--json", HZ_NOW=NOW, **CHAT.env(stub))
        first, second = (orjson.dumps(e.body).decode() for e in stub.exchanges)
    assert orjson.loads(wake.stdout)["status"] == "waiting"
    assert "<situation>" in first and key in first and "This turn woke for: asked." in first
    assert fingerprints and all(fp in first for fp in fingerprints.values())
    assert "must name one of these exactly" in second and key in second
    assert first.count("Pause the turn until a time") == 1  # each tool described once
    (waiting,) = events(world, heinzel_id, "turn.waiting")
    assert waiting["on"] == {"kind": "approval", "key": key}
