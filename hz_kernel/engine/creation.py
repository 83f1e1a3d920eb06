"""``hz heinzel new "a sentence"`` on a real model: the model writes the contract.

The model gets the contract's format, one of the templates as an example
(the one the sentence's words point to, else the digest) and the user's
sentence, and answers through one tool with the whole contract text. hz
compiles it; a contract that does not compile goes back to the model once,
with the coded error, and the second answer is the last: it compiles or its
error is the user's. The heinzel is then proposed like any other, shown
for approval before anything runs. The built-in ``local`` model does not
come here: it maps a sentence to a template (``contracts.sentence``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.messages import ModelMessage

from hz_kernel.adapters.models import ModelEnv, TokenUsage, resolve_model
from hz_kernel.contracts import ContractError, compile_contract, render_template
from hz_kernel.contracts.sentence import choose_template
from hz_kernel.engine.attempts import classify
from hz_kernel.errors import HzError

#: The codes a provider's failure is reported under, by its kind (``attempts.classify``).
FAILURE_CODES = {"retry": "HZE020", "overflow": "HZE065", "quota": "HZE067", "cap": "HZE022"}

GUIDE = """You write contracts for hz. A contract tells one durable agent (a heinzel) which \
document section it keeps true, from which inputs, on which schedule. It is Markdown with a \
YAML frontmatter: `name` (lowercase words joined by hyphens), `description`, and an `hz:` \
table with `schedule` (5-field cron, optional), `inputs` (each a source, a method and its \
args), `requires` (the capabilities the inputs and the output need, nothing more), \
`publishes` (the document section it places drafts in) and `outputs`. The body has the \
sections Goal, Requires, Maintains and Done when, in plain words. Keep what the example does \
not need to change; change names, inputs, schedule, the document and the prose to fit the \
user's sentence. Answer with the contract tool, giving the whole contract text."""


class ContractText(BaseModel):
    """The model's answer: one whole contract."""

    model_config = ConfigDict(defer_build=True)

    text: str = Field(min_length=1, max_length=64_000)


async def contract_by_model(
    sentence: str, spec: str, env: ModelEnv, params: dict[str, str] | None = None
) -> tuple[str, TokenUsage]:
    """The contract the model ``spec`` writes for ``sentence``, compiled; and what it used.

    Raises the compile's ``ContractError`` when the second answer still does
    not compile, and an ``HzError`` (``HZE0…``) when the provider fails.
    """
    model = resolve_model(spec, settings=env)
    agent = Agent(
        model,
        instructions=GUIDE,
        output_type=ToolOutput(ContractText, name="contract", description="The whole contract"),
    )
    hints = "".join(f"\n- {key}: {value}" for key, value in sorted((params or {}).items()))
    ask = f"An example contract:\n\n{_example(sentence)}\n\nWrite the contract for: {sentence}" + (
        f"\nUse these values:{hints}" if hints else ""
    )
    history: list[ModelMessage] | None = None
    used = TokenUsage()
    for turn in range(2):
        try:
            result = await agent.run(ask, message_history=history)
        except HzError:
            raise
        except Exception as exc:  # a provider's failure, whatever its kind, is the user's to see
            raise _failed(exc, spec) from None
        used += TokenUsage.from_run(result.usage)
        text = result.output.text
        try:
            compile_contract(text, source="sentence")
        except ContractError as exc:
            if turn:
                raise
            history = result.all_messages()
            ask = (
                f"That contract does not compile: {exc.one_line()}. "
                "Write it again, whole, with that fixed."
            )
            continue
        return text, used
    raise AssertionError("unreachable: the second answer returns or raises")


def _example(sentence: str) -> str:
    """The template the sentence's words point to, rendered; the digest if they point nowhere."""
    try:
        name = choose_template(sentence)
    except HzError:
        name = "digest"
    return render_template(name, {"goal": " ".join(sentence.split())[:200]})


def _failed(error: BaseException, spec: str) -> HzError:
    kind = classify(error)
    code = FAILURE_CODES.get(kind, "HZE023" if kind == "invalid" else "HZE022")
    text = " ".join(str(error).split()) or type(error).__name__
    return HzError(code, f"the model could not write the contract: {text[:300]}", spec)
