"""A scripted OpenAI-compatible server on 127.0.0.1, for tests of the real provider path.

The Chat Completions dialect of ``tests/support/wire`` under the names the
older tests use: each request takes the next reply from the script, an HTTP
error (``Status``) or one tool call (``ToolCall``), streamed as server-sent
events, or returned whole when the request does not stream.
``ToolCall(cut_after=n)`` drops the connection after ``n`` events.

    with OpenAIStub([Status(429), ToolCall("draft", {...})]) as stub:
        model = resolve_model(stub.spec())
        ...
        assert len(stub.requests) == 2
"""

from __future__ import annotations

from collections.abc import Iterable

from tests.support.wire.openai_chat import OpenAIChatStub
from tests.support.wire.server import Overflow, Reply, Status, ToolCall

__all__ = ["OpenAIStub", "Overflow", "Reply", "Status", "ToolCall"]


class OpenAIStub(OpenAIChatStub):
    """OpenAI's Chat Completions wire, addressed as an ``openai-compatible:`` model."""

    def __init__(self, replies: Iterable[Reply]) -> None:
        super().__init__(list(replies))
