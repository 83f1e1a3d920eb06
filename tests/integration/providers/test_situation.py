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


def test_issue15_item4_an_approval_resumes_the_waiting_turn_after_the_learning_turn(
    tmp_path: Path,
) -> None:
    """A turn waits on the approval of its draft; the user approves it: the learning turn
    (cause approval) runs first and sees the approval, then the waiting turn resumes
    (``turn.resumed`` of that same turn, woken by the approval), not a new turn."""
    with CHAT.stub([ToolCall("draft", DRAFT)]) as stub:
        world, heinzel_id = heinzel_on(tmp_path, CHAT.spec(stub))
        world.hz("heinzel", "wake", "notes-digest", HZ_NOW=NOW, **CHAT.env(stub))
    (key,) = [str(d["key"]) for d in events(world, heinzel_id, "draft.placed")]
    nothing = ToolCall("nothing", {"report": "nothing to learn"})
    resumed = ToolCall("nothing", {"report": "the draft is approved; done"})
    with CHAT.stub([_wait_on(key), nothing, resumed]) as stub:
        env = CHAT.env(stub)
        world.hz("heinzel", "wake", "notes-digest", HZ_NOW=NOW, **env)
        (waiting,) = [e for e in world.spine(heinzel_id) if e["kind"] == "turn.waiting"]
        world.hz("approve", key, HZ_NOW=NOW, **env)
        world.hz("tick", "--once", HZ_NOW=NOW, **env)
        asked = len(stub.exchanges)
    spine = world.spine(heinzel_id)
    order = [
        (e["kind"], e["turn"], (e["data"] or {}).get("cause"))  # type: ignore[union-attr]
        for e in spine
        if e["kind"] in ("turn.started", "turn.resumed", "approval.observed")
    ]
    learning = next(t for kind, t, cause in order if kind == "turn.started" and cause == "approval")
    assert asked == 3
    assert order.index(("approval.observed", learning, None)) < next(
        i for i, (kind, turn, _) in enumerate(order) if kind == "turn.resumed"
    )
    (resume,) = [e for e in spine if e["kind"] == "turn.resumed"]
    assert resume["turn"] == waiting["turn"] and resume["data"]["woken_by"] == "approval"  # type: ignore[index]
    finished = [e for e in spine if e["kind"] == "turn.finished" and e["turn"] == waiting["turn"]]
    assert [f["data"]["report"] for f in finished] == ["the draft is approved; done"]  # type: ignore[index]


def test_issue15_item4_an_answer_resumes_the_turn_that_asked_with_the_question_and_answer(
    tmp_path: Path,
) -> None:
    """The turn that asks a question waits on its answer; ``hz heinzel answer`` resumes that
    same turn (no new turn starts), and its model is shown the question and the answer."""
    ask = ToolCall("question", {"question": "Which team owns search?", "report": "asked"})
    with CHAT.stub([ask, ToolCall("draft", DRAFT)]) as stub:
        world, heinzel_id = heinzel_on(tmp_path, CHAT.spec(stub))
        env = CHAT.env(stub)
        world.hz("heinzel", "wake", "notes-digest", HZ_NOW=NOW, **env)
        (question,) = events(world, heinzel_id, "question.asked")
        (waiting,) = events(world, heinzel_id, "turn.waiting")
        assert waiting["on"] == {"kind": "answer", "key": question["key"]}
        world.hz("heinzel", "answer", "notes-digest", "The search team", HZ_NOW=NOW, **env)
        resumed_request = orjson.dumps(stub.exchanges[-1].body).decode()
    spine = world.spine(heinzel_id)
    assert len([e for e in spine if e["kind"] == "turn.started"]) == 1
    (resumed,) = [e for e in spine if e["kind"] == "turn.resumed"]
    assert resumed["data"]["woken_by"] == "answer"  # type: ignore[index]
    assert "You asked: Which team owns search?" in resumed_request
    assert "The user answered: The search team" in resumed_request
    finished = [e for e in spine if e["kind"] == "turn.finished"]
    assert [(f["turn"], f["data"]["disposition"]) for f in finished] == [  # type: ignore[index]
        (resumed["turn"], "drafted")
    ]
