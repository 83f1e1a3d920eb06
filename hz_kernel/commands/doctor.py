"""``hz doctor``: does each model the home's turns use answer, from where the turns run?

The check runs in the kernel's own process (the daemon's, when one runs), so
it reads the keys and URLs the turns will read, not the shell's the command
was typed in. Each model is asked one tiny question the way a turn asks:
streamed, and answered through a tool, which hz's outcomes need. A failure
says its code and what to do about it; no key is ever shown.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict

from hz_kernel import api
from hz_kernel.adapters.models import DEFAULT_MODEL, ModelEnv, resolve_model
from hz_kernel.adapters.pricing import price_known
from hz_kernel.commands.store import StoreCommands
from hz_kernel.errors import HzError

#: How long one model may take to answer the check's question.
ASK_TIMEOUT_S = 60.0
_QUESTION = "This is a connection check. Call the ping tool with word set to 'ok'."
_CODES = {"retry": "HZE020", "overflow": "HZE065", "quota": "HZE067", "refused": "HZE022"}
_HINTS = {
    "HZE010": "write a model string hz knows (docs/models.md lists them)",
    "HZE011": "set the key in the environment hz's turns run in "
    "(for the daemon: export it, then hz daemon restart), or point <KEY>_FILE at a 0600 file",
    "HZE012": "install the provider's extra, e.g. pip install 'hz[anthropic]'",
    "HZE013": "fix the variable's value (a number)",
    "HZE066": "the key file must be yours alone (chmod 600) and hold the key on one line",
    "HZE020": "the provider did not answer (down, busy or unreachable): check its URL and "
    "your network, then run hz doctor again",
    "HZE022": "the provider refused the request: check the key and that the model name exists",
    "HZE023": "the model answered without calling the tool: hz needs a model with tool calls",
    "HZE065": "the model's context window is too small even for a one-line question",
    "HZE067": "the account's quota or credits are used up",
    "HZE068": "the provider did not answer in time; check its URL and that it is running",
}
LOCAL_NOTE = (
    "the built-in offline stand-in: it follows the contract's outline and your lessons but "
    "understands nothing; set [model] default in hz.toml (or agent.model) to a real model"
)


class _Ping(BaseModel):
    model_config = ConfigDict(defer_build=True)

    word: str


class DoctorCommands(StoreCommands):
    """``hz doctor``."""

    async def doctor(self, *, model: str | None = None, ask: bool = True) -> api.DoctorReport:
        """Check ``model``, or the home's default and every model a heinzel's turns use."""
        users: dict[str, list[str]] = defaultdict(list)
        if model is not None:
            users.setdefault(model.strip() or DEFAULT_MODEL, [])
        else:
            users.setdefault(self.home.settings.model.default or DEFAULT_MODEL, [])
            for row in await self.index.list_heinzels(day=""):
                chosen = self._model_in_use(row, self.home.heinzel_dir(row["id"])).get("model")
                users[str(chosen or self.home.settings.model.default or DEFAULT_MODEL)].append(
                    str(row["name"])
                )
        try:
            env = ModelEnv.from_environ()
        except HzError as exc:
            failed = [_failed(spec, names, exc) for spec, names in users.items()]
            return api.DoctorReport(items=failed)
        checks = [_check(spec, sorted(names), env, ask=ask) for spec, names in users.items()]
        return api.DoctorReport(items=list(await asyncio.gather(*checks)))


async def _check(spec: str, used_by: list[str], env: ModelEnv, *, ask: bool) -> api.DoctorCheck:
    local = spec == DEFAULT_MODEL
    try:
        model = resolve_model(spec, settings=env)
    except HzError as exc:
        return _failed(spec, used_by, exc)
    found = api.DoctorCheck(model=spec, used_by=used_by, ok=True, priced=price_known(spec))
    if local:
        return found.model_copy(update={"note": LOCAL_NOTE})
    if not ask:
        return found.model_copy(update={"note": "configured; not asked (--no-ask)"})
    from pydantic_ai import Agent, ToolOutput
    from pydantic_ai.settings import ModelSettings

    from hz_kernel.engine.attempts import classify

    agent = Agent(model, output_type=ToolOutput(_Ping, name="ping"))
    started = time.perf_counter()
    try:
        async with asyncio.timeout(ASK_TIMEOUT_S):
            async with agent.run_stream(
                _QUESTION, model_settings=ModelSettings(max_tokens=64)
            ) as run:
                await run.get_output()
                usage = run.usage()
    except TimeoutError:
        said = f"no answer within {ASK_TIMEOUT_S:.0f} s{_at(model)}"
        return _failed(spec, used_by, HzError("HZE068", said, spec))
    except Exception as exc:  # a provider's failure, whatever its kind, is the finding
        kind = classify(exc)
        code = _CODES.get(kind, "HZE023" if kind == "invalid" else "HZE022")
        text = " ".join(str(exc).split()) or type(exc).__name__
        where = _at(model) if code == "HZE020" else ""
        return _failed(spec, used_by, HzError(code, text[:300] + where, spec))
    seconds = round(time.perf_counter() - started, 3)
    tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0)
    return found.model_copy(update={"seconds": seconds, "tokens": tokens})


def _at(model: Any) -> str:
    """Where the model was asked (a local Ollama or OpenAI-compatible server's URL): the
    first thing to check when nothing answers there."""
    url = getattr(model, "base_url", None)
    return f" (asked at {url})" if url else ""


def _failed(spec: str, used_by: list[str], error: HzError) -> api.DoctorCheck:
    return api.DoctorCheck(
        model=spec,
        used_by=used_by,
        ok=False,
        code=error.code,
        problem=error.message,
        hint=_HINTS.get(error.code, ""),
        priced=price_known(spec),
    )
