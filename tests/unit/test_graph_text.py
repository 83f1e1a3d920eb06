"""``hz graph``'s text shows a document's name as words, never as terminal control."""

from __future__ import annotations

from hz_kernel import api
from hz_kernel.cli.graph import render


def test_control_and_format_characters_in_labels_are_escaped() -> None:
    asset = "asset:doc:notes\n  writes doc:fake.md\u202e.md"
    graph = api.Graph(
        nodes=[
            api.GraphNode(id="heinzel:w", kind="heinzel", label="w\x1b[2J", heinzel="hz-1"),
            api.GraphNode(id=asset, kind="asset", label=asset.removeprefix("asset:")),
        ],
        edges=[
            api.GraphEdge(
                source="heinzel:w", target=asset, relation="writes", declared=False, observed=True
            )
        ],
    )
    text = render(graph)
    assert text.count("\n") == 2
    assert "\x1b" not in text and "\u202e" not in text
    assert "doc:notes\\u000a  writes doc:fake.md\\u202e.md" in text
