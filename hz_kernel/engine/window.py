"""A model's context window, and how much of it a turn's context will take.

hz has no provider's tokenizer, so it estimates: the UTF-8 bytes of the
instructions, the messages and the tools' descriptions over a ratio per
model family, plus a few tokens of framing per message. The ratios are
low (more tokens than the providers count for English prose), so a
context the estimate lets through fits. The window and the answer's
reserve come from a table of known models; ``[model] windows`` in
``hz.toml`` overrides a model's window by its spec (``"ollama:llama3.1" =
32768``). The budget is the window less that reserve: a context over it is
compacted before the model is asked (``hz_kernel.engine.summary``), and one
still over is not sent. An Ollama or OpenAI-compatible server's window is
its own configuration, so without an override it is not known: such a
context is sent, and compacted only if the server says it overflowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Tokens each message costs beyond its text (role, separators), as providers frame them.
MESSAGE_OVERHEAD_TOKENS = 8


@dataclass(frozen=True, slots=True)
class Window:
    """``tokens`` in all, ``reserve`` of them kept for the answer; ``bytes_per_token`` estimates;
    ``known``: the size is the model's (the table's or the user's), not a guess."""

    tokens: int
    reserve: int
    bytes_per_token: float
    known: bool = True

    @property
    def budget(self) -> int:
        """What the context may take: the window less the answer's reserve."""
        return max(1, self.tokens - self.reserve)


#: Known windows by spec prefix, the longest matching prefix wins (``docs/models.md``).
KNOWN_WINDOWS: dict[str, Window] = {
    "local": Window(32_000, 4_096, 4.0),
    "openai:gpt-4.1": Window(1_047_576, 32_768, 3.5),
    "openai:gpt-4o": Window(128_000, 16_384, 3.5),
    "openai:gpt-5": Window(400_000, 128_000, 3.5),
    "openai:o": Window(200_000, 100_000, 3.5),
    "openai-chat:gpt-4.1": Window(1_047_576, 32_768, 3.5),
    "openai-chat:gpt-4o": Window(128_000, 16_384, 3.5),
    "anthropic:claude": Window(200_000, 8_192, 3.0),
}
#: A model no entry names (an Ollama or OpenAI-compatible server's own): not known.
UNKNOWN_WINDOW = Window(8_192, 2_048, 3.0, known=False)


def window_for(spec: str, overrides: Mapping[str, int] | None = None) -> Window:
    """The window of the model ``spec`` names: an override's size, else the table's."""
    spec = spec.strip()
    known = max(
        (prefix for prefix in KNOWN_WINDOWS if spec.startswith(prefix)), key=len, default=None
    )
    window = KNOWN_WINDOWS[known] if known is not None else UNKNOWN_WINDOW
    size = (overrides or {}).get(spec)
    if size is None:
        return window
    return Window(size, min(window.reserve, size // 4), window.bytes_per_token)


def estimate_tokens(
    window: Window, instructions: str, messages: Sequence[str], tools: str = ""
) -> int:
    """How many tokens the model will count for this request, erring high."""
    size = sum(len(text.encode()) for text in (instructions, tools, *messages))
    return math.ceil(size / window.bytes_per_token) + MESSAGE_OVERHEAD_TOKENS * (len(messages) + 1)
