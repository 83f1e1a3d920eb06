"""Model strings to pydantic-ai models, keys from the environment, knobs validated."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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


def test_issue15_item2_openai_chat_uses_chat_completions_with_the_openai_key() -> None:
    env = ModelEnv.from_environ({"OPENAI_API_KEY": "sk-test-not-real"})
    model = resolve_model("openai-chat:gpt-4o", settings=env)
    assert isinstance(model, OpenAIChatModel) and not isinstance(model, OllamaModel)
    assert model.model_name == "gpt-4o"
    assert model.settings is not None and model.settings.get("max_retries") == 0


def test_issue15_item2_a_key_can_come_from_a_private_file(tmp_path: Path) -> None:
    key_file = tmp_path / "openai.key"
    key_file.write_text("sk-from-a-file\n")
    key_file.chmod(0o600)
    env = ModelEnv.from_environ({"OPENAI_API_KEY_FILE": str(key_file)})
    assert "sk-from-a-file" not in repr(env)
    assert isinstance(resolve_model("openai:gpt-4o", settings=env), OpenAIResponsesModel)


@pytest.mark.parametrize(
    ("mode", "content", "says"),
    [
        (0o644, "sk-from-a-file\n", "chmod 600"),
        (0o600, "\n", "on one line"),
        (0o600, "sk-one\nsk-two\n", "on one line"),
    ],
)
def test_issue15_item2_a_key_file_that_is_shared_or_not_one_key_is_refused(
    tmp_path: Path, mode: int, content: str, says: str
) -> None:
    key_file = tmp_path / "openai.key"
    key_file.write_text(content)
    key_file.chmod(mode)
    env = ModelEnv.from_environ({"OPENAI_API_KEY_FILE": str(key_file)})
    with pytest.raises(HzError) as caught:
        resolve_model("openai:gpt-4o", settings=env)
    assert caught.value.code == "HZE066" and says in caught.value.one_line()
    assert "sk-" not in caught.value.one_line()
    assert caught.value.place == "OPENAI_API_KEY_FILE"


def test_issue15_item2_a_missing_key_file_is_refused_and_the_local_model_never_reads_it(
    tmp_path: Path,
) -> None:
    env = ModelEnv.from_environ({"OPENAI_API_KEY_FILE": str(tmp_path / "absent.key")})
    assert isinstance(resolve_model("local", settings=env), LocalModel)
    with pytest.raises(HzError) as caught:
        resolve_model("openai:gpt-4o", settings=env)
    assert caught.value.code == "HZE066" and "absent.key" in caught.value.one_line()


def test_issue15_item2_the_wait_scale_knob_is_a_fraction() -> None:
    assert ModelEnv.from_environ({"HZ_MODEL_WAIT_SCALE": "0.001"}).wait_scale == 0.001
    with pytest.raises(HzError) as caught:
        ModelEnv.from_environ({"HZ_MODEL_WAIT_SCALE": "2"})
    assert caught.value.code == "HZE013" and caught.value.place == "HZ_MODEL_WAIT_SCALE"
