"""The real provider path inside a turn: pydantic-ai's OpenAI model against a scripted server."""

from __future__ import annotations

from pathlib import Path

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import digest_contract, make_world
from tests.support.openai_stub import OpenAIStub, Status, ToolCall

DRAFT = {"output": "digest", "text": "## Digest\n- fixed the login bug\n", "report": "drafted 1"}


async def _kernel_with(tmp_path: Path, model: str) -> Kernel:
    world = make_world(tmp_path)
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract(model=model))
    await kernel.approve(ref=made.id)
    return kernel


async def _spine(kernel: Kernel) -> list[tuple[str, dict[str, object]]]:
    row = await kernel.resolve("notes-digest")
    async with kernel.holding(row["id"]) as held:
        return [(e.kind, e.data) for e in held.scan.events]


async def test_rate_limit_then_success_on_the_same_step(tmp_path: Path) -> None:
    with OpenAIStub([Status(429, retry_after=0.01), ToolCall("draft", DRAFT)]) as stub:
        kernel = await _kernel_with(tmp_path, stub.spec())
        report = await kernel.wake(ref="notes-digest")
        events = await _spine(kernel)
        await kernel.close()
    assert report.disposition == "drafted" and len(stub.requests) == 2
    kinds = [k for k, _ in events]
    assert kinds.count("attempt.started") == 2 and kinds.count("attempt.retry") == 1
    think = [d for k, d in events if k == "step.done" and d["step"] == "think"]
    assert len(think) == 1 and think[0]["attempts"] == 2
    assert (tmp_path / "reports" / "digest.md").read_text().count("fixed the login bug") == 1


async def test_a_stream_cut_after_output_fails_the_step_and_is_not_retried(tmp_path: Path) -> None:
    cut = ToolCall("draft", DRAFT, chunk_chars=48, cut_after=1)
    with OpenAIStub([cut, ToolCall("draft", DRAFT)]) as stub:
        kernel = await _kernel_with(tmp_path, stub.spec())
        report = await kernel.wake(ref="notes-digest")
        events = await _spine(kernel)
        await kernel.close()
    assert len(stub.requests) == 1
    assert report.disposition == "failed" and report.reason == "stream_truncated"
    failed = [d for k, d in events if k == "attempt.failed"]
    assert [f["code"] for f in failed] == ["stream_truncated"] and failed[0]["output_size"] > 0
    assert "draft.placed" not in [k for k, _ in events]
