"""Property: compile_contract answers every input with a contract or a coded, placed error."""

from __future__ import annotations

import re

import yaml
from contract_samples import WEEKLY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hz_kernel.contracts import CompiledContract, ContractError, compile_contract, render_template

SEEDS = [WEEKLY, *(render_template(name, {}) for name in ("changelog", "digest", "weekly-report"))]
PLACE = re.compile(r"^fuzz\.prose\.md:([1-9][0-9]*)$")
FUZZ = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

NASTY_VALUES = [
    "",
    "[",
    "]",
    "{",
    "}",
    "{}",
    "[]",
    "*a",
    "&a x",
    "!!binary aGk=",
    "!!python/object:os.system",
    "-1",
    "1e999",
    "1.0e+999",
    ".nan",
    ".inf",
    "0x1F",
    "1:30",
    "yes",
    "no",
    "~",
    "null",
    "''",
    '"\\x00"',
    '"\\ud800"',
    "|",
    ">",
    "- a",
    "? x",
    "<<: {}",
    "2024-01-01",
    "'unterminated",
    "doc:",
    "doc:../x",
    "* * * * *",
    '"* * * * *"',
    '"61 * * * *"',
    "0m",
    "9999999d",
    "ftp://x",
    "git",
    "files",
    "shell",
    "nope",
    "owner",
    "local",
    "openai:",
    "x" * 300,
    "\t",
    "%YAML 1.2",
]
JUNK_LINES = [
    "---",
    "...",
    "### Goal",
    "###",
    "```",
    "<!--",
    "-->",
    "\t\t",
    "hz:",
    "  - x",
    "name: x",
    "  inputs: ~",
    "    a: {source: git}",
    "#",
    " : ",
    "\x00",
    "\ufeff",
]


def check_outcome(text: str) -> None:
    try:
        compiled = compile_contract(text, source="fuzz.prose.md")
    except ContractError as error:
        assert re.fullmatch(r"HZC\d{3}", error.code), error.code
        assert error.place is not None and PLACE.match(error.place), error.place
        assert error.message and "Traceback" not in error.message
        return
    assert isinstance(compiled, CompiledContract)
    assert CompiledContract.model_validate_json(compiled.model_dump_json()) == compiled
    assert compile_contract(text, source="again").fingerprint == compiled.fingerprint


@st.composite
def mutated_contracts(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(SEEDS)).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            lines = [""]
        index = draw(st.integers(0, len(lines) - 1))
        operation = draw(
            st.sampled_from(
                ["delete", "duplicate", "swap", "value", "swap-values", "junk", "indent", "text"]
            )
        )
        line = lines[index]
        if operation == "delete":
            del lines[index]
        elif operation == "duplicate":
            lines.insert(index, line)
        elif operation == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], line
        elif operation == "value" and ":" in line:
            value = draw(st.sampled_from(NASTY_VALUES) | st.text(max_size=20))
            lines[index] = line.split(":", 1)[0] + ": " + value
        elif operation == "swap-values":
            other = lines[draw(st.integers(0, len(lines) - 1))]
            if ":" in line and ":" in other:
                lines[index] = line.split(":", 1)[0] + ":" + other.split(":", 1)[1]
        elif operation == "junk":
            lines.insert(index, draw(st.sampled_from(JUNK_LINES) | st.text(max_size=30)))
        elif operation == "indent":
            lines[index] = " " * draw(st.integers(0, 9)) + line.lstrip()
        else:
            cut = draw(st.integers(0, len(line)))
            lines[index] = line[:cut] + draw(st.text(max_size=10)) + line[cut:]
    return "\n".join(lines)


KEYS = st.sampled_from(
    [
        "schedule",
        "render_on_schedule",
        "inputs",
        "requires",
        "publishes",
        "outputs",
        "approvers",
        "agent",
        "source",
        "method",
        "args",
        "recheck",
        "facet",
        "repo",
        "pattern",
        "url",
        "asset",
        "capability",
        "valid_for",
        "model",
        "max_usd",
        "name",
        "namespace",
        "hz",
        "x",
    ]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.sampled_from(NASTY_VALUES)
)


def nested(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5)


YAML_VALUES = st.recursive(SCALARS, nested, max_leaves=25)


@st.composite
def random_yaml_contracts(draw: st.DrawFn) -> str:
    value = draw(YAML_VALUES)
    if draw(st.booleans()):
        value = {"name": draw(st.sampled_from(["sample", "sample", "x", 3, None])), "hz": value}
    front = yaml.safe_dump(value, allow_unicode=draw(st.booleans()), default_flow_style=None)
    body = draw(st.sampled_from(["### Goal\nKeep it.\n", "", "### Goal\n", "# x\n### Goal\ny"]))
    return f"---\n{front}---\n{body}"


@FUZZ
@given(
    st.text()
    | st.binary().map(lambda raw: raw.decode("utf-8", "surrogateescape"))
    | st.builds(lambda a, b: f"---\n{a}\n---\n{b}", st.text(), st.text())
)
def test_random_text_never_escapes_as_another_exception(text: str) -> None:
    check_outcome(text)


@FUZZ
@given(mutated_contracts() | random_yaml_contracts())
def test_mutated_contracts_and_random_yaml_never_escape(text: str) -> None:
    check_outcome(text)


def test_the_property_can_fail() -> None:
    """The check rejects an error without a line, so the properties above test something."""
    try:
        check_outcome_with(ContractError("HZC001", "x", "fuzz.prose.md"))
    except AssertionError:
        return
    raise AssertionError("a place without a line passed the check")


def check_outcome_with(error: ContractError) -> None:
    assert error.place is not None and PLACE.match(error.place), error.place
