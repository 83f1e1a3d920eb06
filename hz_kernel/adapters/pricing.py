"""Whether a model string has a known price, answered without loading a model SDK.

``hz heinzel show`` asks this for every heinzel it shows, so the module is
light: the genai-prices table (a second to load) is imported only for the
providers it can price.
"""

from __future__ import annotations

from typing import Final

PRICED_PROVIDERS: Final = {"openai": "openai", "openai-chat": "openai", "anthropic": "anthropic"}
"""hz's provider names mapped to the genai-prices table's; other providers are unpriced."""


def price_known(spec: str) -> bool:
    """True for the local model and for the table's models; False for Ollama, an
    OpenAI-compatible server, or a model the table does not list (its cost is unknown)."""
    provider, _, name = spec.strip().partition(":")
    if provider in ("", "local"):
        return True
    provider_id = PRICED_PROVIDERS.get(provider)
    if provider_id is None:
        return False
    import genai_prices

    try:
        genai_prices.calc_price(genai_prices.Usage(), name.strip(), provider_id=provider_id)
    except LookupError:
        return False
    return True
