"""Spending caps: per turn (the contract's and the user's) and per day across all heinzels.

A turn that would cross a cap does not call the model: it ends skipped
with reason ``cap``. The estimate is conservative — the context's bytes as
input tokens plus a reserve for the answer — priced like the real call.
"""

from __future__ import annotations

from dataclasses import dataclass

from hz_kernel.adapters.models import TokenUsage, price_usd

OUTPUT_RESERVE_TOKENS = 2048


@dataclass(frozen=True, slots=True)
class CapCheck:
    ok: bool
    estimate_usd: float
    reason: str | None = None


def check_caps(
    *,
    model: str,
    context_bytes: int,
    contract_max_usd: float,
    user_max_usd: float,
    spent_today_usd: float,
    max_usd_per_day: float,
) -> CapCheck:
    """Would a turn with this much context stay under every cap?"""
    usage = TokenUsage(input_tokens=context_bytes // 4 + 1, output_tokens=OUTPUT_RESERVE_TOKENS)
    estimate = price_usd(model, usage).usd
    per_turn = min(contract_max_usd, user_max_usd)
    if estimate > per_turn:
        return CapCheck(
            False, estimate, f"estimated {estimate:.4f} USD exceeds {per_turn} per turn"
        )
    if spent_today_usd + estimate > max_usd_per_day:
        return CapCheck(
            False,
            estimate,
            f"{spent_today_usd:.2f} USD spent today; the day's cap is {max_usd_per_day}",
        )
    return CapCheck(True, estimate)
