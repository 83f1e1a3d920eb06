"""Issue 15 item 2: each real provider runs a whole turn on its own wire, and fails well.

Every test starts a local server speaking one provider's wire format
(``tests/support/wire``) and drives the real ``hz`` binary at it: the model
string is the one a user would write (``openai:``, ``openai-chat:``,
``anthropic:``, ``ollama:``, ``openai-compatible:``), the server's address
and the key come from the environment. Waits between attempts are scaled
down by ``HZ_MODEL_WAIT_SCALE``; the spine keeps the wait hz decided.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from hz_kernel.adapters.models import TokenUsage, price_usd
from tests.support.wire.providers import (
    DRAFT,
    DRAFT_TEXT,
    FAST_WAITS,
    KEY,
    NOW,
    PROVIDERS,
    Provider,
    body_records,
    events,
    heinzel_on,
)
from tests.support.wire.server import Overflow, Status, ToolCall

BY_NAME = pytest.mark.parametrize("provider", PROVIDERS, ids=[p.name for p in PROVIDERS])


def _chunks(world, heinzel_id: str) -> list[str]:
    return [str(r["text"]) for r in body_records(world, heinzel_id) if r.get("type") == "chunk"]


@BY_NAME
def test_issue15_item2_a_whole_turn_streams_records_usage_and_cost_and_places_the_draft(
    tmp_path: Path, provider: Provider
) -> None:
    with provider.stub([ToolCall("draft", DRAFT, chunk_chars=12)]) as stub:
        env = provider.env(stub)
        spec = provider.spec(stub)
        world, heinzel_id = heinzel_on(tmp_path, spec, **env)
        wake = world.hz("heinzel", "wake", "notes-digest", "--json", HZ_NOW=NOW, **env)
        exchanges = stub.exchanges
    assert orjson.loads(wake.stdout)["disposition"] == "drafted"
    assert len(exchanges) == 1 and exchanges[0].body.get("stream") is True
    assert any(KEY in value for value in exchanges[0].headers.values())
    chunks = _chunks(world, heinzel_id)
    assert len(chunks) > (1 if provider.pieces else 0) and "".join(chunks) == DRAFT_TEXT
    cached = 20 if provider.cached else 0
    cost = price_usd(spec, TokenUsage(input_tokens=120, output_tokens=60, cached_tokens=cached))
    assert cost.priced is provider.priced and (cost.usd > 0) is provider.priced
    think = [d for d in events(world, heinzel_id, "step.done") if d["step"] == "think"]
    assert [(d["tokens"], d["tokens_cached"], d["attempts"]) for d in think] == [(180, cached, 1)]
    finished = events(world, heinzel_id, "turn.finished")
    assert [(f["disposition"], f["tokens"]) for f in finished] == [("drafted", 180)]
    assert finished[0].get("usd", 0.0) == pytest.approx(cost.usd)
    assert finished[0].get("priced", True) is provider.priced
    assert [d["output"] for d in events(world, heinzel_id, "draft.placed")] == ["digest"]
    document = (tmp_path / "reports" / "digest.md").read_text()
    assert document.count("fixed the login bug") == 1
    shown = orjson.loads(world.hz("heinzel", "show", "notes-digest", "--json", HZ_NOW=NOW).stdout)
    assert shown["caps"]["tokens_month"] == 180 and shown["caps"]["priced"] is provider.priced


@BY_NAME
def test_issue15_item2_a_rate_limit_waits_as_told_up_to_the_cap_and_is_journalled(
    tmp_path: Path, provider: Provider
) -> None:
    script = [Status(429, retry_after=3), Status(429, retry_after=120), ToolCall("draft", DRAFT)]
    with provider.stub(script) as stub:
        env = provider.env(stub) | FAST_WAITS
        world, heinzel_id = heinzel_on(tmp_path, provider.spec(stub), **env)
        wake = world.hz("heinzel", "wake", "notes-digest", "--json", HZ_NOW=NOW, **env)
        asked = [exchange.at for exchange in stub.exchanges]
    assert orjson.loads(wake.stdout)["disposition"] == "drafted" and len(asked) == 3
    retries = events(world, heinzel_id, "attempt.retry")
    assert [(r["attempt"], r["delay_ms"]) for r in retries] == [(1, 3000), (2, 20000)]
    # The waits were waited, scaled by HZ_MODEL_WAIT_SCALE (0.001): 3 ms, then 20 ms.
    assert asked[1] - asked[0] >= 0.003 and asked[2] - asked[1] >= 0.020
    assert all("RateLimit" in str(r["error"]) for r in retries)
    assert len(events(world, heinzel_id, "attempt.started")) == 3
    think = [d for d in events(world, heinzel_id, "step.done") if d["step"] == "think"]
    assert [d["attempts"] for d in think] == [3]
    assert (tmp_path / "reports" / "digest.md").read_text().count("fixed the login bug") == 1


@BY_NAME
def test_issue15_item2_a_server_error_that_persists_fails_the_turn_with_a_code(
    tmp_path: Path, provider: Provider
) -> None:
    script = [Status(500), Status(503), Status(502), ToolCall("draft", DRAFT)]
    with provider.stub(script) as stub:
        env = provider.env(stub) | FAST_WAITS
        world, heinzel_id = heinzel_on(tmp_path, provider.spec(stub), **env)
        wake = world.hz("heinzel", "wake", "notes-digest", "--json", check=False, HZ_NOW=NOW, **env)
        requests = stub.requests
    assert len(requests) == 3, wake.stderr
    assert len(events(world, heinzel_id, "attempt.retry")) == 2
    failed = events(world, heinzel_id, "attempt.failed")
    assert [f["code"] for f in failed] == ["HZE020"]
    finished = events(world, heinzel_id, "turn.finished")
    assert [f["disposition"] for f in finished] == ["failed"]
    assert str(finished[0]["reason"]).startswith("HZE020")
    assert "draft.placed" not in world.kinds(heinzel_id)


@BY_NAME
def test_issue15_item2_a_stream_cut_before_any_text_is_recorded_and_retried_once(
    tmp_path: Path, provider: Provider
) -> None:
    cut = ToolCall("draft", DRAFT, chunk_chars=12, cut_after=provider.quiet_frames)
    with provider.stub([cut, ToolCall("draft", DRAFT, chunk_chars=12)]) as stub:
        env = provider.env(stub) | FAST_WAITS
        world, heinzel_id = heinzel_on(tmp_path, provider.spec(stub), **env)
        wake = world.hz("heinzel", "wake", "notes-digest", "--json", HZ_NOW=NOW, **env)
        requests = stub.requests
    assert orjson.loads(wake.stdout)["disposition"] == "drafted" and len(requests) == 2
    retries = events(world, heinzel_id, "attempt.retry")
    assert [r["attempt"] for r in retries] == [1]
    assert "".join(_chunks(world, heinzel_id)) == DRAFT_TEXT
    assert len(events(world, heinzel_id, "draft.placed")) == 1
    assert (tmp_path / "reports" / "digest.md").read_text().count("fixed the login bug") == 1


@BY_NAME
def test_issue15_item2_a_stream_cut_after_text_fails_without_a_second_answer(
    tmp_path: Path, provider: Provider
) -> None:
    cut = ToolCall("draft", DRAFT, chunk_chars=12, cut_after=provider.loud_frames)
    with provider.stub([cut, ToolCall("draft", DRAFT)]) as stub:
        env = provider.env(stub) | FAST_WAITS
        world, heinzel_id = heinzel_on(tmp_path, provider.spec(stub), **env)
        world.hz("heinzel", "wake", "notes-digest", check=False, HZ_NOW=NOW, **env)
        requests = stub.requests
    assert len(requests) == 1
    failed = events(world, heinzel_id, "attempt.failed")
    assert [f["code"] for f in failed] == ["stream_truncated"] and failed[0]["output_size"] > 0
    streamed = "".join(_chunks(world, heinzel_id))
    assert streamed and DRAFT_TEXT.startswith(streamed)
    if provider.pieces:
        assert streamed != DRAFT_TEXT
    assert [f["disposition"] for f in events(world, heinzel_id, "turn.finished")] == ["failed"]
    assert "draft.placed" not in world.kinds(heinzel_id)
    assert not (tmp_path / "reports" / "digest.md").exists()


@BY_NAME
def test_issue15_item2_a_context_overflow_is_its_own_coded_failure(
    tmp_path: Path, provider: Provider
) -> None:
    with provider.stub([Overflow(), ToolCall("draft", DRAFT)]) as stub:
        env = provider.env(stub) | FAST_WAITS
        world, heinzel_id = heinzel_on(tmp_path, provider.spec(stub), **env)
        world.hz("heinzel", "wake", "notes-digest", check=False, HZ_NOW=NOW, **env)
        requests = stub.requests
    assert len(requests) == 1
    assert events(world, heinzel_id, "attempt.retry") == []
    failed = events(world, heinzel_id, "attempt.failed")
    assert [f["code"] for f in failed] == ["HZE065"]
    finished = events(world, heinzel_id, "turn.finished")
    assert [f["disposition"] for f in finished] == ["failed"]
    assert str(finished[0]["reason"]).startswith("HZE065")


@BY_NAME
def test_issue15_a_turn_calls_a_granted_tool_on_each_providers_wire(
    tmp_path: Path, provider: Provider
) -> None:
    """Each provider's tool-call encoding carries a function tool both ways: the model asks
    ``read_file`` (granted by the contract's ``files:read``), hz journals and runs it, and the
    file's text goes back to the model in that provider's shape before it drafts."""
    script = [ToolCall("read_file", {"path": "notes/monday.md"}), ToolCall("draft", DRAFT)]
    with provider.stub(script) as stub:
        env = provider.env(stub)
        world, heinzel_id = heinzel_on(tmp_path, provider.spec(stub), **env)
        wake = world.hz("heinzel", "wake", "notes-digest", "--json", HZ_NOW=NOW, **env)
        exchanges = stub.exchanges
    assert orjson.loads(wake.stdout)["disposition"] == "drafted", wake.stderr
    assert [d["tool"] for d in events(world, heinzel_id, "tool.started")] == ["read_file"]
    (finished,) = events(world, heinzel_id, "tool.finished")
    assert not finished.get("error") and finished["size"] > 0
    assert len(exchanges) == 2
    assert "fixed the login bug" in orjson.dumps(exchanges[1].body).decode()
