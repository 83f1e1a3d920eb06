"""Issue 18 item 1: every MCP tool says what it does, takes and answers, from the table alone."""

from __future__ import annotations

from hz_kernel import operations as ops
from hz_kernel.mcp_head import TOOLS, describe_tool


def test_every_argument_of_every_tool_is_described_and_no_shared_meaning_is_unused() -> None:
    used: set[str] = set()
    for name, operation in TOOLS.items():
        request = operation.request
        request.model_rebuild()
        for argument in request.model_fields:
            if not ops.docstring(request, argument):
                assert argument in ops.ARGUMENTS, (name, argument)
                used.add(argument)
        described = ops.describe(operation)
        assert operation.summary and operation.returns, name
        assert described.startswith(operation.summary) and "``" not in described, name
    assert set(ops.ARGUMENTS) == used


def test_only_the_cockpit_s_own_operations_are_no_tools() -> None:
    hidden = {op.name for op in ops.OPERATIONS.values() if op.cockpit_only}
    assert hidden == {"composer.get", "composer.save", "composer.sent"}
    assert set(TOOLS) == {
        op.name.replace(".", "_") for op in ops.OPERATIONS.values() if not op.cockpit_only
    }


def test_every_property_of_every_input_schema_has_a_plain_description() -> None:
    """An agent reads the input schema, not the tool's prose: each property says what it is,
    with no reST markup and no pointer to a file it cannot open."""
    for name, operation in TOOLS.items():
        tool = describe_tool(name, operation)
        properties = tool.input_schema.get("properties", {})
        for argument, schema in properties.items():
            said = schema.get("description")
            assert said and said != argument, (name, argument)
            assert "``" not in said and "docs/" not in said, (name, argument, said)
        assert "docs/" not in tool.description, name


def test_field_docstrings_are_those_pydantic_would_read() -> None:
    """``ops.docstring`` reads the source lazily; it finds what ``use_attribute_docstrings``
    found when it was set on ``Request``."""
    from pydantic._internal._docs_extraction import extract_docstrings_from_cls

    for operation in ops.OPERATIONS.values():
        request = operation.request
        expected = extract_docstrings_from_cls(request, use_inspect=True)
        found = {name: ops.docstring(request, name) for name in request.model_fields}
        assert {k: v for k, v in found.items() if v} == expected, request.__name__
