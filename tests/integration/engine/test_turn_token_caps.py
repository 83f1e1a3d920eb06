"""Issue 12 item 8: caps cap every model, including the ones without a known price.

An ``openai-compatible:`` or ``ollama:`` model costs "0 USD" to hz because no
price table knows it, so the dollar caps never stop it. Its turns are capped
by tokens (``agent.max_tokens``), record that their cost is unknown, and
``hz heinzel show`` says so. The provider is a real HTTP server on loopback
(``tests/support/openai_stub.py``) driven by real ``hz`` processes.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.support.homes import World, digest_contract, make_world
from tests.support.openai_stub import OpenAIStub, ToolCall

NOW = "2026-10-30T15:00:00Z"
DRAFT = {"output": "digest", "text": "## Digest\n- fixed the login bug\n", "report": "drafted 1"}


def _world(tmp_path: Path, model: str, agent_extra: str = "") -> tuple[World, str]:
    world = make_world(tmp_path)
    text = digest_contract(model=model).replace("max_usd: 0.2", "max_usd: 0.2" + agent_extra)
    contract = tmp_path / "digest.prose.md"
    contract.write_text(text)
    made = orjson.loads(world.hz("heinzel", "new", str(contract), "--json", HZ_NOW=NOW).stdout)
    world.hz("approve", "notes-digest", HZ_NOW=NOW)
    return world, str(made["id"])


def _events(world: World, heinzel_id: str, kind: str) -> list[dict[str, object]]:
    return [e["data"] for e in world.spine(heinzel_id) if e["kind"] == kind]  # type: ignore[misc]


def _answer_limit(request: dict[str, object]) -> object:
    return request.get("max_completion_tokens", request.get("max_tokens"))


@pytest.mark.parametrize("provider", ["openai-compatible", "ollama"])
def test_issue12_item8_an_unpriced_model_is_capped_by_tokens_and_its_cost_is_unknown(
    tmp_path: Path, provider: str
) -> None:
    with OpenAIStub([ToolCall("draft", DRAFT)]) as stub:
        spec = stub.spec() if provider == "openai-compatible" else "ollama:stub-model"
        world, heinzel_id = _world(tmp_path, spec)
        wake = world.hz("heinzel", "wake", "notes-digest", "--json", HZ_NOW=NOW,
                        OLLAMA_BASE_URL=stub.base_url)  # fmt: skip
        requests = stub.requests
    assert orjson.loads(wake.stdout)["disposition"] == "drafted"
    assert len(requests) == 1
    limit = _answer_limit(requests[0])
    assert isinstance(limit, int) and 0 < limit <= 100_000
    think = [d for d in _events(world, heinzel_id, "step.done") if d["step"] == "think"]
    assert [(d["tokens"], d["priced"]) for d in think] == [(180, False)]
    finished = _events(world, heinzel_id, "turn.finished")
    assert [(f["tokens"], f.get("usd", 0.0), f["priced"]) for f in finished] == [(180, 0.0, False)]


def test_issue12_item8_a_context_over_max_tokens_is_skipped_before_any_request(
    tmp_path: Path,
) -> None:
    with OpenAIStub([ToolCall("draft", DRAFT)]) as stub:
        world, heinzel_id = _world(tmp_path, stub.spec(), "\n    max_tokens: 1000")
        world.hz("heinzel", "wake", "notes-digest", HZ_NOW=NOW)
        requests = stub.requests
    assert requests == []
    finished = _events(world, heinzel_id, "turn.finished")
    assert [f["disposition"] for f in finished] == ["skipped"]
    assert "max_tokens 1000" in str(finished[0]["reason"])


def test_issue12_item8_a_model_that_answers_past_max_tokens_is_stopped(tmp_path: Path) -> None:
    """The provider reports more tokens than the turn may use: the step ends at the cap."""
    heavy = ToolCall("draft", DRAFT, prompt_tokens=1500, completion_tokens=3000)
    with OpenAIStub([heavy, ToolCall("draft", DRAFT)]) as stub:
        world, heinzel_id = _world(tmp_path, stub.spec(), "\n    max_tokens: 4000")
        world.hz("heinzel", "wake", "notes-digest", check=False, HZ_NOW=NOW)
        requests = stub.requests
    assert len(requests) == 1
    failed = _events(world, heinzel_id, "attempt.failed")
    assert [f["code"] for f in failed] == ["HZE060"]
    finished = _events(world, heinzel_id, "turn.finished")
    assert [(f["disposition"], f["tokens"], f["priced"]) for f in finished] == [
        ("failed", 4500, False)
    ]
    assert "max_tokens 4000" in str(finished[0]["reason"])
    assert "draft.placed" not in world.kinds(heinzel_id)


def test_issue12_item8_show_says_the_cost_is_unknown_and_what_caps_the_turns(
    tmp_path: Path,
) -> None:
    with OpenAIStub([ToolCall("draft", DRAFT)]) as stub:
        world, _ = _world(tmp_path, stub.spec(), "\n    max_tokens: 50000")
        world.hz("heinzel", "wake", "notes-digest", HZ_NOW=NOW)
    shown = world.hz("heinzel", "show", "notes-digest", HZ_NOW=NOW).stdout
    assert "cost unknown" in shown and "50000 tokens" in shown and "180 tokens" in shown
    caps = orjson.loads(world.hz("heinzel", "show", "notes-digest", "--json", HZ_NOW=NOW).stdout)[
        "caps"
    ]
    assert caps == {
        "model": stub.spec(),
        "priced": False,
        "max_usd": 0.2,
        "max_tokens": 50000,
        "tokens_month": 180,
    }


def test_issue12_item8_show_of_a_priced_model_keeps_its_dollar_line(tmp_path: Path) -> None:
    world, _ = _world(tmp_path, "local")
    shown = world.hz("heinzel", "show", "notes-digest", HZ_NOW=NOW).stdout
    assert "cost this month" in shown and "cost unknown" not in shown
    caps = orjson.loads(world.hz("heinzel", "show", "notes-digest", "--json", HZ_NOW=NOW).stdout)[
        "caps"
    ]
    assert caps["priced"] is True and caps["max_tokens"] == 100_000
