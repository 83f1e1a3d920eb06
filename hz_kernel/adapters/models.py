"""The model seam: model strings to pydantic-ai models, and what their tokens cost.

A model string names where a turn's think step goes: ``local`` (the default,
offline and keyless), ``openai:<name>`` (OpenAI's Responses API),
``openai-chat:<name>`` (its Chat Completions API), ``anthropic:<name>``,
``ollama:<name>`` or ``openai-compatible:<name>@<base url>``. Keys come from
the user's own environment, or from a private file the environment names
(``<KEY>_FILE``, read only when the provider is used); hz sends them nowhere
else. Every SDK-backed model is built with the SDK's own retries off, because
the engine journals and paces each attempt itself.

The framing helpers the context builder uses (``render_inputs`` and friends)
are re-exported here, so callers need only this module. The local model and
pydantic-ai load on first use: commands that run no turn (``hz heinzel show``)
never pay for them.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from hz_kernel.adapters.framing import (
    FramedInput,
    render_approval,
    render_inputs,
    render_rejection,
    render_steering,
    render_summary,
    render_summary_request,
)
from hz_kernel.adapters.pricing import PRICED_PROVIDERS
from hz_kernel.errors import HzError

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.usage import RunUsage

    from hz_kernel.adapters.local_model import LOCAL_MODEL_NAME, LocalModel, estimate_tokens

__all__ = [
    "LOCAL_MODEL_NAME",
    "FramedInput",
    "LocalModel",
    "ModelEnv",
    "TokenUsage",
    "UsdCost",
    "estimate_tokens",
    "price_usd",
    "render_approval",
    "render_inputs",
    "render_rejection",
    "render_steering",
    "render_summary",
    "render_summary_request",
    "resolve_model",
    "scaled_sleep",
]


def __getattr__(name: str) -> Any:
    """The local model's re-exported names, loaded (with pydantic-ai) on first use."""
    if name in ("LOCAL_MODEL_NAME", "LocalModel", "estimate_tokens"):
        from hz_kernel.adapters import local_model

        return getattr(local_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DEFAULT_MODEL: Final = "local"
DEFAULT_OLLAMA_URL: Final = "http://localhost:11434/v1"
_SPEC_HELP = (
    "use local, openai:<name>, openai-chat:<name>, anthropic:<name>, ollama:<name> "
    "or openai-compatible:<name>@<base url>"
)
#: The provider keys hz reads, each from its variable or from the file ``<variable>_FILE`` names.
KEY_VARIABLES: Final = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OLLAMA_API_KEY",
    "HZ_OPENAI_COMPATIBLE_API_KEY",
)
_KEY_FILE_MAX = 4096
_NO_SDK_RETRIES: ModelSettings = {"max_retries": 0}


class ModelEnv(BaseModel):
    """What the model seam reads from the environment: provider keys, URLs and knobs.

    Built from ``os.environ`` by default; tests pass their own. Keys are secret
    strings so they never show up in a repr or a log line; a key kept in a file
    is only its path here (``key_files``), read when its provider is used.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    ollama_base_url: str = DEFAULT_OLLAMA_URL
    ollama_api_key: SecretStr | None = None
    compatible_api_key: SecretStr | None = None
    key_files: dict[str, str] = Field(default_factory=dict)
    delay_ms: int = Field(default=0, ge=0, le=600_000)
    hold_file: str | None = None
    record_file: str | None = None
    local_usd_per_mtok: float = Field(default=0.0, ge=0.0, le=1_000_000.0)
    wait_scale: float = Field(default=1.0, ge=0.0, le=1.0)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ModelEnv:
        """Read keys and knobs; a knob that is not a number is an ``HZE013`` error."""
        env = os.environ if environ is None else environ

        def secret(name: str) -> SecretStr | None:
            value = env.get(name, "").strip()
            return SecretStr(value) if value else None

        fields: dict[str, object] = {
            "openai_api_key": secret("OPENAI_API_KEY"),
            "openai_base_url": env.get("OPENAI_BASE_URL") or None,
            "anthropic_api_key": secret("ANTHROPIC_API_KEY"),
            "anthropic_base_url": env.get("ANTHROPIC_BASE_URL") or None,
            "ollama_base_url": env.get("OLLAMA_BASE_URL") or DEFAULT_OLLAMA_URL,
            "ollama_api_key": secret("OLLAMA_API_KEY"),
            "compatible_api_key": secret("HZ_OPENAI_COMPATIBLE_API_KEY"),
            "key_files": {
                variable: path
                for variable in KEY_VARIABLES
                if (path := env.get(f"{variable}_FILE", "").strip())
            },
        }
        knobs = {
            "delay_ms": "HZ_MODEL_DELAY_MS",
            "hold_file": "HZ_MODEL_HOLD_FILE",
            "record_file": "HZ_MODEL_RECORD_FILE",
            "local_usd_per_mtok": "HZ_LOCAL_USD_PER_MTOK",
            "wait_scale": "HZ_MODEL_WAIT_SCALE",
        }
        for field_name, variable in knobs.items():
            if raw := env.get(variable, "").strip():
                fields[field_name] = raw
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            variable = knobs.get(str(first["loc"][0]), str(first["loc"][0]))
            raise HzError("HZE013", f"not a valid value: {first['msg']}", variable) from None


def _split_spec(spec: str) -> tuple[str, str]:
    cleaned = spec.strip()
    if cleaned in ("", DEFAULT_MODEL):
        return DEFAULT_MODEL, ""
    provider, sep, name = cleaned.partition(":")
    if not sep or not name.strip() or provider not in _PROVIDERS:
        raise HzError("HZE010", f"unknown model {spec!r}: {_SPEC_HELP}", "model")
    return provider, name.strip()


def read_key_file(path: str, variable: str) -> str:
    """The key in the file ``<variable>_FILE`` names: one line, private to the user (0600).

    A file others could read, a missing or unreadable one, or an empty one is an
    ``HZE066`` error naming the variable and the path, never the content.
    """
    place = f"{variable}_FILE"
    try:
        info = Path(path).stat()
        if not stat.S_ISREG(info.st_mode):
            raise HzError("HZE066", f"{path} is not a regular file", place)
        if info.st_mode & 0o077:
            raise HzError(
                "HZE066",
                f"{path} can be read by others (mode {stat.S_IMODE(info.st_mode):o}): "
                f"chmod 600 {path}",
                place,
            )
        with Path(path).open("rb") as handle:
            raw = handle.read(_KEY_FILE_MAX + 1)
    except OSError as exc:
        raise HzError("HZE066", f"cannot read {path}: {exc.strerror}", place) from None
    key = raw.decode("utf-8", errors="replace").strip()
    if not key or len(raw) > _KEY_FILE_MAX or "\n" in key:
        raise HzError("HZE066", f"{path} must hold the key alone, on one line", place)
    return key


def _key(key: SecretStr | None, variable: str, env: ModelEnv) -> str | None:
    """A provider key: from its variable, else from the file ``<variable>_FILE`` names."""
    if key is not None:
        return key.get_secret_value()
    path = env.key_files.get(variable)
    return read_key_file(path, variable) if path else None


def _require(key: SecretStr | None, variable: str, env: ModelEnv, spec: str) -> str:
    value = _key(key, variable, env)
    if value is None:
        raise HzError(
            "HZE011",
            f"{spec} needs an API key: set {variable} in your environment, "
            f"or {variable}_FILE to a file only you can read",
        )
    return value


def _openai_provider(env: ModelEnv, spec: str) -> OpenAIProvider:
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIProvider(
        base_url=env.openai_base_url,
        api_key=_require(env.openai_api_key, "OPENAI_API_KEY", env, spec),
    )


def _openai(name: str, env: ModelEnv, spec: str) -> Model:
    from pydantic_ai.models.openai import OpenAIResponsesModel

    provider = _openai_provider(env, spec)
    return OpenAIResponsesModel(name, provider=provider, settings=_NO_SDK_RETRIES)


def _openai_chat(name: str, env: ModelEnv, spec: str) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel

    provider = _openai_provider(env, spec)
    return OpenAIChatModel(name, provider=provider, settings=_NO_SDK_RETRIES)


def _anthropic(name: str, env: ModelEnv, spec: str) -> Model:
    try:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider
    except ImportError:
        raise HzError(
            "HZE012", f"{spec} needs the anthropic extra: pip install 'hz[anthropic]'"
        ) from None
    provider = AnthropicProvider(
        api_key=_require(env.anthropic_api_key, "ANTHROPIC_API_KEY", env, spec),
        base_url=env.anthropic_base_url,
    )
    return AnthropicModel(name, provider=provider, settings=_NO_SDK_RETRIES)


def _ollama(name: str, env: ModelEnv, spec: str) -> Model:
    from pydantic_ai.models.ollama import OllamaModel
    from pydantic_ai.providers.ollama import OllamaProvider

    key = _key(env.ollama_api_key, "OLLAMA_API_KEY", env)
    provider = OllamaProvider(base_url=env.ollama_base_url, api_key=key)
    return OllamaModel(name, provider=provider, settings=_NO_SDK_RETRIES)


def _openai_compatible(name_at_url: str, env: ModelEnv, spec: str) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    name, _, base_url = name_at_url.partition("@")
    if not name or not base_url.startswith(("http://", "https://")):
        raise HzError(
            "HZE010", f"{spec!r} needs a model name and a base URL: <name>@http://host/v1", "model"
        )
    key = _key(env.compatible_api_key, "HZ_OPENAI_COMPATIBLE_API_KEY", env)
    provider = OpenAICompatibleProvider("openai-compatible", base_url=base_url, api_key=key)
    return OpenAIChatModel(name, provider=provider, settings=_NO_SDK_RETRIES)


_PROVIDERS = {
    "openai": _openai,
    "openai-chat": _openai_chat,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "openai-compatible": _openai_compatible,
}


def resolve_model(spec: str = DEFAULT_MODEL, *, settings: ModelEnv | None = None) -> Model:
    """The pydantic-ai model a model string names; bad strings and missing keys are HzErrors."""
    env = settings if settings is not None else ModelEnv.from_environ()
    provider, name = _split_spec(spec)
    if provider == DEFAULT_MODEL:
        from hz_kernel.adapters.local_model import LocalModel

        return LocalModel(
            delay_ms=env.delay_ms, hold_file=env.hold_file, record_file=env.record_file
        )
    return _PROVIDERS[provider](name, env, spec.strip())


async def scaled_sleep(seconds: float) -> None:
    """Wait between attempts: ``seconds`` times ``HZ_MODEL_WAIT_SCALE`` (1 unless a test sets it).

    The journal keeps the wait as decided; only the real pause shrinks, so a
    test can check a 20-second cap without waiting 20 seconds.
    """
    await asyncio.sleep(seconds * ModelEnv.from_environ().wait_scale)


class TokenUsage(BaseModel):
    """Tokens one step used; ``input_tokens`` includes the ``cached_tokens`` read from a cache
    and the ``cache_write_tokens`` written to one (Anthropic prices those above plain input)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    requests: int = Field(default=0, ge=0)

    @classmethod
    def from_run(cls, usage: RunUsage) -> TokenUsage:
        return cls(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            requests=usage.requests,
        )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            requests=self.requests + other.requests,
        )


class UsdCost(BaseModel):
    """What a usage cost; ``priced`` is False when no price is known (then ``usd`` is 0)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    model: str
    usd: float
    priced: bool
    input_tokens: int
    output_tokens: int
    cached_tokens: int


def price_usd(model_spec: str, usage: TokenUsage, *, settings: ModelEnv | None = None) -> UsdCost:
    """Price ``usage`` from the genai-prices table; the local model costs its knob's rate.

    Models the table doesn't know, Ollama and OpenAI-compatible servers are
    unpriced: 0 USD with ``priced=False``, so the user sees that cost is unknown.
    """
    provider, name = _split_spec(model_spec)

    def cost(usd: float, priced: bool) -> UsdCost:
        return UsdCost(
            model=model_spec.strip() or DEFAULT_MODEL,
            usd=usd,
            priced=priced,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_tokens,
        )

    if provider == DEFAULT_MODEL:
        env = settings if settings is not None else ModelEnv.from_environ()
        return cost(usage.tokens * env.local_usd_per_mtok / 1_000_000, True)
    provider_id = PRICED_PROVIDERS.get(provider)
    if provider_id is None:
        return cost(0.0, False)
    import genai_prices  # its price table, only where a turn is priced (not every command's start)

    table_usage = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cached_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    try:
        calculation = genai_prices.calc_price(table_usage, name, provider_id=provider_id)
    except LookupError:
        return cost(0.0, False)
    return cost(float(calculation.total_price), True)
