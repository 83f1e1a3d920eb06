"""Issue 15 item 5: a context that never overflows the model's window.

Before the think step asks, ``context.prepared`` records the context's
estimate against the model's window. Over a known window's budget, the
history is compacted into a summary first; a provider that still says the
context was too long gets one compacted retry. Real homes, the offline local
model (its window set small in ``hz.toml``) and the OpenAI-compatible wire
stub for the provider's own overflow error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hz_kernel.engine.window import KNOWN_WINDOWS, window_for
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import read_body
from tests.support.homes import World, digest_contract, make_world
from tests.support.openai_stub import OpenAIStub, ToolCall
from tests.support.wire.server import Overflow

DRAFT = {"output": "digest", "text": "- fixed the login bug\n", "report": "drafted 1"}
SUMMARY = {
    "asset": "digest",
    "wants": "a short digest of the notes",
    "decisions": ["newest first"],
    "sources": ["notes"],
    "report": "summarised",
}


def _of(world: World, heinzel: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in world.spine(heinzel) if e["kind"] == kind]


async def _turns(world: World, heinzel: str, count: int) -> None:
    """``count`` asked turns, each after a change to the notes (so each has history to leave)."""
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        for n in range(count):
            (world.notes / f"day{n}.md").write_text(f"# Day {n}\n- did thing number {n}\n")
            await kernel.wake(ref=heinzel)
    finally:
        await kernel.close()


def _settings(world: World, text: str) -> None:
    toml = world.home / "hz.toml"
    toml.write_text(toml.read_text() + text)


async def _made(world: World, contract: str) -> str:
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        made = await kernel.new(text=contract)
        await kernel.approve(ref=made.id)
        return made.id
    finally:
        await kernel.close()


async def test_a_context_over_the_window_is_compacted_before_the_model_is_asked(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    _settings(world, "[heinzel]\nsummary_keep_turns = 0\n")
    heinzel = await _made(world, digest_contract())
    await _turns(world, heinzel, 12)
    (last,) = _of(world, heinzel, "context.prepared")[-1:]
    assert last["data"]["compacted"] is False and last["data"]["window_tokens"] == 32_000
    # A window whose budget the next context misses by a little: the history must go.
    wanted = last["data"]["estimate_tokens"] - 20
    window = -(-wanted * 4 // 3)
    while window_for("local", {"local": window}).budget > wanted:
        window -= 1
    budget = window_for("local", {"local": window}).budget
    _settings(world, f"[model]\nwindows = {{ local = {window} }}\n")

    await _turns(world, heinzel, 1)
    prepared = _of(world, heinzel, "context.prepared")[-1]
    turn = prepared["turn"]
    assert prepared["data"]["compacted"] is True and prepared["data"]["reason"] == "budget"
    assert prepared["data"]["estimate_tokens"] <= prepared["data"]["budget_tokens"] == budget
    (summary,) = [e for e in _of(world, heinzel, "summary.written") if e["turn"] == turn]
    assert summary["seq"] < prepared["seq"], "the summary is written before the model is asked"
    (finished,) = [e for e in _of(world, heinzel, "turn.finished") if e["turn"] == turn]
    assert finished["data"]["disposition"] == "drafted"
    records = read_body(world.home / "heinzel" / heinzel, turn) or []
    (context,) = [r for r in records if r["type"] == "context"]
    assert context["labels"][0] == "summary" and "history" not in context["labels"]


async def test_a_context_that_cannot_fit_even_compacted_is_never_sent(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    (world.notes / "big.md").write_text("".join(f"- line {n}\n" for n in range(3000)))
    _settings(world, "[model]\nwindows = { local = 2048 }\n")
    heinzel = await _made(world, digest_contract())
    await _turns(world, heinzel, 1)
    (finished,) = _of(world, heinzel, "turn.finished")
    assert finished["data"]["disposition"] == "failed"
    assert str(finished["data"]["reason"]).startswith("HZE070: the context needs about")
    assert _of(world, heinzel, "attempt.started") == [], "no model was asked"


async def test_a_providers_overflow_is_compacted_and_the_step_asked_once_more(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    replies = [ToolCall("draft", DRAFT) for _ in range(3)]
    replies += [Overflow(), ToolCall("summary", SUMMARY), ToolCall("draft", DRAFT)]
    with OpenAIStub(replies) as stub:
        heinzel = await _made(world, digest_contract(model=stub.spec()))
        await _turns(world, heinzel, 4)
    turn = _of(world, heinzel, "turn.finished")[-1]["turn"]
    mine = [e for e in world.spine(heinzel) if e["turn"] == turn]
    kinds = [e["kind"] for e in mine]
    failed = [e["data"]["code"] for e in mine if e["kind"] == "attempt.failed"]
    assert failed == ["HZE065"]
    prepared = [e["data"] for e in mine if e["kind"] == "context.prepared"]
    shown = [(p["compacted"], p.get("reason")) for p in prepared]
    assert shown == [(False, None), (True, "overflow")]
    assert "window_tokens" not in prepared[0], "a server's window is its own: not guessed"
    second = max(n for n, kind in enumerate(kinds) if kind == "context.prepared")
    assert kinds.index("attempt.failed") < kinds.index("summary.written") < second
    assert mine[-1]["data"]["disposition"] == "drafted"


async def test_a_second_overflow_fails_the_turn_with_its_code(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    replies = [ToolCall("draft", DRAFT), Overflow(), ToolCall("summary", SUMMARY), Overflow()]
    with OpenAIStub(replies) as stub:
        heinzel = await _made(world, digest_contract(model=stub.spec()))
        await _turns(world, heinzel, 2)
    finished = _of(world, heinzel, "turn.finished")[-1]["data"]
    assert finished["disposition"] == "failed"
    assert str(finished["reason"]).startswith("HZE065")


@pytest.mark.parametrize("spec", ["anthropic:claude-sonnet-4-5", "openai:gpt-4o-mini", "local"])
def test_known_models_have_their_windows_and_overrides_win(spec: str) -> None:
    window = window_for(spec)
    assert window.known and window.budget < window.tokens
    assert window_for(spec, {spec: 50_000}).tokens == 50_000
    assert not window_for("ollama:llama3.1").known
    assert window_for("ollama:llama3.1", {"ollama:llama3.1": 32_768}).known
    assert set(KNOWN_WINDOWS) >= {"local", "anthropic:claude"}
