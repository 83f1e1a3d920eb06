"""Cost from usage through the genai-prices table; unknown models are flagged, not guessed."""

from __future__ import annotations

import genai_prices
import pytest

from hz_kernel.adapters.models import ModelEnv, TokenUsage, price_usd

USAGE = TokenUsage(input_tokens=10_000, output_tokens=2_000, cached_tokens=4_000, requests=1)


def test_a_known_model_is_priced_from_the_table_with_cached_tokens() -> None:
    cost = price_usd("openai:gpt-4o", USAGE)
    expected = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=10_000, output_tokens=2_000, cache_read_tokens=4_000),
        "gpt-4o",
        provider_id="openai",
    )
    assert cost.priced is True
    assert cost.usd == pytest.approx(float(expected.total_price))
    assert cost.usd > 0
    assert (cost.input_tokens, cost.output_tokens, cost.cached_tokens) == (10_000, 2_000, 4_000)
    uncached = price_usd("openai:gpt-4o", USAGE.model_copy(update={"cached_tokens": 0}))
    assert uncached.usd > cost.usd


def test_an_anthropic_model_is_priced_too() -> None:
    cost = price_usd("anthropic:claude-sonnet-4-5", USAGE)
    assert cost.priced is True
    assert cost.usd > 0


@pytest.mark.parametrize(
    "spec",
    [
        "openai:no-such-model-hz",
        "ollama:llama3.2",
        "openai-compatible:gpt-4o@http://127.0.0.1:1/v1",
    ],
)
def test_unknown_or_self_hosted_models_cost_zero_and_say_unpriced(spec: str) -> None:
    cost = price_usd(spec, USAGE)
    assert cost.priced is False
    assert cost.usd == 0.0
    assert cost.input_tokens == 10_000
    assert cost.cached_tokens == 4_000


def test_the_local_model_is_free_unless_the_knob_sets_a_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HZ_LOCAL_USD_PER_MTOK", raising=False)
    assert price_usd("local", USAGE).usd == 0.0
    assert price_usd("local", USAGE, settings=ModelEnv(local_usd_per_mtok=3.0)).usd == (
        pytest.approx(12_000 * 3.0 / 1_000_000)
    )
    monkeypatch.setenv("HZ_LOCAL_USD_PER_MTOK", "1000")
    cost = price_usd("local", USAGE)
    assert cost.priced is True
    assert cost.usd == pytest.approx(12.0)


def test_issue15_item2_tokens_written_to_anthropics_cache_are_priced_as_cache_writes() -> None:
    """Anthropic charges more for input it writes to its prompt cache than for plain input;
    the step's usage carries those tokens to the table instead of pricing them as input."""
    usage = TokenUsage(input_tokens=10_000, output_tokens=2_000, cache_write_tokens=6_000)
    cost = price_usd("anthropic:claude-sonnet-4-5", usage)
    expected = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=10_000, output_tokens=2_000, cache_write_tokens=6_000),
        "claude-sonnet-4-5",
        provider_id="anthropic",
    )
    assert cost.usd == pytest.approx(float(expected.total_price))
    plain = price_usd(
        "anthropic:claude-sonnet-4-5", usage.model_copy(update={"cache_write_tokens": 0})
    )
    assert cost.usd > plain.usd
    assert (usage + usage).cache_write_tokens == 12_000
