"""Spending caps: per turn (the contract's and the user's) and per day across all heinzels.

Every model is capped by tokens (the contract's ``agent.max_tokens``): it is
the one cap a model without a known price (Ollama, an OpenAI-compatible
server) has, since its dollars count as 0. Where a price is known, the
dollar caps apply too. A turn that would cross a cap does not call the
model: it ends skipped with reason ``cap``. The estimate is conservative —
the context's bytes as input tokens plus a reserve for the answer — priced
like the real call. The model calls themselves carry the rest of the token
budget as their limit, so a long answer cannot run past it either; an
unpriced model's answers are also limited one by one, because such servers
may not report usage at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from hz_kernel.adapters.models import TokenUsage, price_usd
from hz_kernel.engine.attempts import TokenBudget

OUTPUT_RESERVE_TOKENS = 2048
ANSWER_TOKENS_UNPRICED = 8192
"""The most one answer of a model without a known price may be (its request's max_tokens)."""


@dataclass(frozen=True, slots=True)
class CapCheck:
    ok: bool
    estimate_usd: float
    estimate_tokens: int
    priced: bool
    """False when the model has no known price: its cost is unknown, only tokens cap it."""
    reason: str | None = None


def check_caps(
    *,
    model: str,
    context_bytes: int,
    max_tokens: int,
    contract_max_usd: float,
    user_max_usd: float,
    spent_today_usd: float,
    max_usd_per_day: float,
) -> CapCheck:
    """Would a turn with this much context stay under every cap?"""
    usage = TokenUsage(input_tokens=context_bytes // 4 + 1, output_tokens=OUTPUT_RESERVE_TOKENS)
    cost = price_usd(model, usage)
    estimate, tokens = cost.usd, usage.tokens

    def over(reason: str) -> CapCheck:
        return CapCheck(False, estimate, tokens, cost.priced, reason)

    if tokens > max_tokens:
        return over(f"estimated {tokens} tokens exceed max_tokens {max_tokens} per turn")
    per_turn = min(contract_max_usd, user_max_usd)
    if estimate > per_turn:
        return over(f"estimated {estimate:.4f} USD exceeds {per_turn} per turn")
    if spent_today_usd + estimate > max_usd_per_day:
        return over(f"{spent_today_usd:.2f} USD spent today; the day's cap is {max_usd_per_day}")
    return CapCheck(True, estimate, tokens, cost.priced)


def token_budget(*, max_tokens: int, context_bytes: int, priced: bool) -> TokenBudget:
    """The think step's token limits: ``max_tokens`` in all and, for an unpriced model,
    each answer at most what the context leaves (never more than ``ANSWER_TOKENS_UNPRICED``)."""
    if priced:
        return TokenBudget(total=max_tokens)
    left = max_tokens - (context_bytes // 4 + 1)
    return TokenBudget(total=max_tokens, output=max(1, min(left, ANSWER_TOKENS_UNPRICED)))
