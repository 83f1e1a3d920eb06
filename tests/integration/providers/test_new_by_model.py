"""Issue 15 item 6: ``hz heinzel new "a sentence"`` with a real model: the model writes it.

The home's default model is a scripted OpenAI-compatible server speaking the
real wire. Its first contract does not compile; the coded error goes back
to it once, and its second answer becomes the proposed heinzel, shown for
approval. Two failures in a row are the user's error, and nothing is made.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hz_kernel.api import NewHeinzel
from hz_kernel.contracts import ContractError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, digest_contract, make_world
from tests.support.openai_stub import OpenAIStub, ToolCall

SENTENCE = "every morning, a digest of what changed in my notes"
GOOD = digest_contract()
BAD = GOOD.replace("files:read", "files:reed")


def _on_model(world: World, spec: str) -> None:
    toml = world.home / "hz.toml"
    toml.write_text(toml.read_text() + f'[model]\ndefault = "{spec}"\n')


async def _new_on_stub(world: World, stub: OpenAIStub) -> NewHeinzel:
    """``new`` from the sentence, on a home whose default model is ``stub``."""
    _on_model(world, stub.spec())
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        return await kernel.new(sentence=SENTENCE)
    finally:
        await kernel.close()


def _texts(request: dict[str, object]) -> str:
    return json.dumps(request.get("messages"))


async def test_the_model_writes_the_contract_and_its_compile_error_goes_back_once(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    replies = [ToolCall("contract", {"text": BAD}), ToolCall("contract", {"text": GOOD})]
    with OpenAIStub(replies) as stub:
        made = await _new_on_stub(world, stub)
        requests = stub.requests
    assert made.state == "proposed" and made.contract == GOOD and made.name == "notes-digest"
    assert len(requests) == 2
    assert SENTENCE in _texts(requests[0]) and 'name: \\"digest\\"' in _texts(requests[0])
    assert "HZC033" in _texts(requests[1]), "the compile error went back to the model"
    usage = [e["data"] for e in world.spine(made.id) if e["kind"] == "usage"]
    assert [u["purpose"] for u in usage] == ["contract"] and usage[0]["tokens"] > 0


async def test_a_contract_that_still_does_not_compile_is_the_users_error(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    replies = [ToolCall("contract", {"text": BAD}), ToolCall("contract", {"text": BAD})]
    with OpenAIStub(replies) as stub, pytest.raises(ContractError) as raised:
        await _new_on_stub(world, stub)
    assert raised.value.code == "HZC033"
    assert not Home.resolve(world.home).heinzel_ids(), "nothing is made"
