"""The providers under test: each one's wire stub, model string and the environment that points
hz at it, with a key only the stub should ever see."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from unittest.mock import patch

import orjson

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, digest_contract, make_world
from tests.support.wire.anthropic import AnthropicStub
from tests.support.wire.ollama import OllamaStub
from tests.support.wire.openai_chat import OpenAIChatStub
from tests.support.wire.openai_responses import OpenAIResponsesStub
from tests.support.wire.server import Reply, WireStub

NOW = "2026-12-02T09:00:00Z"
#: A key shaped like a real one, so a leak of it anywhere is unmistakable.
KEY = "sk-hzwire-7f3a9c1e5b2d4f6a8c0e"
DRAFT_TEXT = "## Digest\n- fixed the login bug\n- shipped search\n"
DRAFT = {"output": "digest", "text": DRAFT_TEXT, "report": "drafted 2 items"}
#: Real waits between attempts shrink to a thousandth; the journal keeps the wait as decided.
FAST_WAITS = {"HZ_MODEL_WAIT_SCALE": "0.001"}


@dataclass(frozen=True)
class Provider:
    """One provider's wire as hz meets it.

    ``quiet_frames`` frames of a streamed tool call carry no visible text yet
    (a cut there is before output); ``loud_frames`` frames already carry some
    (a cut there is after output) when the arguments stream in 12-character pieces.
    ``pieces`` is False for a wire that sends a tool call's arguments whole.
    """

    name: str
    stub: Callable[[list[Reply]], WireStub]
    spec: Callable[[WireStub], str]
    env: Callable[[WireStub], dict[str, str]]
    pieces: bool
    priced: bool
    cached: bool
    quiet_frames: int
    loud_frames: int


PROVIDERS = [
    Provider(
        name="openai-responses",
        stub=OpenAIResponsesStub,
        spec=lambda stub: "openai:gpt-4o",
        env=lambda stub: {"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": KEY},
        pieces=True,
        priced=True,
        cached=True,
        quiet_frames=3,
        loud_frames=6,
    ),
    Provider(
        name="openai-chat",
        stub=OpenAIChatStub,
        spec=lambda stub: "openai-chat:gpt-4o",
        env=lambda stub: {"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": KEY},
        pieces=True,
        priced=True,
        cached=True,
        quiet_frames=1,
        loud_frames=4,
    ),
    Provider(
        name="anthropic",
        stub=AnthropicStub,
        spec=lambda stub: "anthropic:claude-sonnet-4-5",
        env=lambda stub: {"ANTHROPIC_BASE_URL": stub.root_url, "ANTHROPIC_API_KEY": KEY},
        pieces=True,
        priced=True,
        cached=True,
        quiet_frames=3,
        loud_frames=6,
    ),
    Provider(
        name="ollama",
        stub=OllamaStub,
        spec=lambda stub: "ollama:llama3.2",
        env=lambda stub: {"OLLAMA_BASE_URL": stub.base_url, "OLLAMA_API_KEY": KEY},
        pieces=False,
        priced=False,
        cached=False,
        quiet_frames=1,
        loud_frames=2,
    ),
    Provider(
        name="openai-compatible",
        stub=lambda replies: OpenAIChatStub(replies, flavour="compatible"),
        spec=lambda stub: f"openai-compatible:qwen3@{stub.base_url}",
        env=lambda stub: {"HZ_OPENAI_COMPATIBLE_API_KEY": KEY},
        pieces=True,
        priced=False,
        cached=False,
        quiet_frames=1,
        loud_frames=4,
    ),
]


def heinzel_on(tmp_path: Path, spec: str, **env: str) -> tuple[World, str]:
    """A home with the notes-digest heinzel on model ``spec``, approved.

    Made by a kernel in this process, at the pinned time: only the turn is the
    test's subject, and two ``hz`` processes per test would double its time.
    ``env`` is accepted for symmetry with the wake; creating needs no key.
    """
    world = make_world(tmp_path)

    async def create() -> str:
        kernel = await Kernel.open(Home.resolve(world.home))
        try:
            made = await kernel.new(text=digest_contract(model=spec))
            await kernel.approve(ref=made.id)
            return str(made.id)
        finally:
            await kernel.close()

    with patch.dict(os.environ, {"HZ_NOW": env.get("HZ_NOW", NOW)}):
        return world, asyncio.run(create())


def events(world: World, heinzel_id: str, kind: str) -> list[dict[str, object]]:
    return [e["data"] for e in world.spine(heinzel_id) if e["kind"] == kind]  # type: ignore[misc]


def body_records(world: World, heinzel_id: str) -> list[dict[str, object]]:
    """Every record of every turn body the heinzel has."""
    records = []
    for path in sorted((world.home / "heinzel" / heinzel_id).rglob("*.jsonl")):
        if path.name != "session.jsonl":
            records += [orjson.loads(line) for line in path.read_bytes().splitlines() if line]
    return records
