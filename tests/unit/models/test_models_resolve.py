"""Model strings to pydantic-ai models, keys from the environment, knobs validated."""

from __future__ import annotations

import importlib.util

import pytest
from pydantic_ai.models.ollama import OllamaModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

from hz_kernel.adapters.models import LocalModel, ModelEnv, resolve_model
from hz_kernel.errors import HzError

NO_KEYS = ModelEnv()


@pytest.mark.parametrize("spec", ["local", "", "  local  "])
def test_local_is_the_default_and_needs_nothing(spec: str) -> None:
    model = resolve_model(spec, settings=ModelEnv(delay_ms=25))
    assert isinstance(model, LocalModel)
    assert model.delay_ms == 25
    assert model.model_name == "hz-local"


def test_resolve_model_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "15")
    model = resolve_model()
    assert isinstance(model, LocalModel)
    assert model.delay_ms == 15


def test_openai_needs_a_key_and_says_so_in_one_line() -> None:
    with pytest.raises(HzError) as caught:
        resolve_model("openai:gpt-4o", settings=NO_KEYS)
    assert caught.value.code == "HZE011"
    assert "OPENAI_API_KEY" in caught.value.one_line()
    assert "\n" not in caught.value.one_line()


def test_openai_with_a_key_uses_the_responses_model_without_sdk_retries() -> None:
    env = ModelEnv.from_environ({"OPENAI_API_KEY": "sk-test-not-real"})
    model = resolve_model("openai:gpt-4o", settings=env)
    assert isinstance(model, OpenAIResponsesModel)
    assert model.model_name == "gpt-4o"
    assert model.settings is not None
    assert model.settings.get("max_retries") == 0
    assert "sk-test-not-real" not in repr(env)


def test_anthropic_needs_its_extra_or_its_key() -> None:
    with pytest.raises(HzError) as caught:
        resolve_model("anthropic:claude-sonnet-4-5", settings=NO_KEYS)
    installed = importlib.util.find_spec("anthropic") is not None
    assert caught.value.code == ("HZE011" if installed else "HZE012")


def test_ollama_goes_through_its_openai_compatible_endpoint() -> None:
    env = ModelEnv.from_environ({"OLLAMA_BASE_URL": "http://127.0.0.1:11434/v1"})
    model = resolve_model("ollama:llama3.2", settings=env)
    assert isinstance(model, OllamaModel)
    assert model.model_name == "llama3.2"
    assert model.base_url.startswith("http://127.0.0.1:11434/v1")


def test_an_openai_compatible_server_is_named_with_its_base_url() -> None:
    model = resolve_model("openai-compatible:qwen3@http://127.0.0.1:8000/v1", settings=NO_KEYS)
    assert isinstance(model, OpenAIChatModel)
    assert model.model_name == "qwen3"
    assert model.base_url.startswith("http://127.0.0.1:8000/v1")
    assert model.settings is not None and model.settings.get("max_retries") == 0


@pytest.mark.parametrize(
    "spec",
    [
        "gpt-4o",
        "openai:",
        "bogus:model",
        "openai-compatible:qwen3",
        "openai-compatible:qwen3@ftp://host",
        "openai-compatible:@http://host/v1",
    ],
)
def test_bad_model_strings_are_hze010(spec: str) -> None:
    with pytest.raises(HzError) as caught:
        resolve_model(spec, settings=NO_KEYS)
    assert caught.value.code == "HZE010"
    assert caught.value.place == "model"


@pytest.mark.parametrize(
    ("variable", "value"),
    [("HZ_MODEL_DELAY_MS", "soon"), ("HZ_MODEL_DELAY_MS", "-5"), ("HZ_LOCAL_USD_PER_MTOK", "x")],
)
def test_bad_knobs_are_hze013_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(HzError) as caught:
        ModelEnv.from_environ({variable: value})
    assert caught.value.code == "HZE013"
    assert caught.value.place == variable
