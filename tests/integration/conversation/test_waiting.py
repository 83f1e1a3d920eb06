"""A turn may wait: the condition is data, no process waits; a restart and a tick resume it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel.adapters.sources import SourceRequest, fetch
from hz_kernel.clock import now_utc
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import digest_contract, make_world
from tests.support.openai_stub import OpenAIStub, ToolCall

UNTIL = "2026-12-01T12:00:00+00:00"


def _wait_on_a_change_that_never_comes(fingerprint: str) -> dict[str, object]:
    """Wait until noon, or until the notes move away from what they are now (they won't)."""
    return {
        "until": UNTIL,
        "on": {"kind": "source", "input": "notes", "fingerprint_not": fingerprint},
        "report": "waiting for the reviewer until noon",
    }


DRAFT = {"output": "digest", "text": "## Digest\n- fixed the login bug\n", "report": "drafted"}


async def test_a_waiting_turn_survives_a_restart_and_until_wins_over_an_on_that_never_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(tmp_path)
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00Z")
    notes = SourceRequest(
        source="files", method="glob", args={"pattern": "**/*.md", "root": "notes"}
    )
    now_fp = fetch(notes, now=now_utc(), base_dir=tmp_path).fingerprint()
    wait = ToolCall("wait", _wait_on_a_change_that_never_comes(now_fp))
    with OpenAIStub([wait, ToolCall("draft", DRAFT)]) as stub:
        kernel = await Kernel.open(Home.resolve(world.home))
        made = await kernel.new(
            text=digest_contract(model=stub.spec()).replace("recheck: 30m", "recheck: 1m")
        )
        await kernel.approve(ref=made.id)
        first = await kernel.wake(ref=made.id)
        row = await kernel.resolve(made.id)
        await kernel.close()
        assert first.status == "waiting" and row["state"] == "waiting"
        assert row["waiting_turn"] == first.turn and row["waiting_until"].startswith(
            "2026-12-01T12"
        )

        kernel = await Kernel.open(Home.resolve(world.home))
        early = await kernel.tick_once()
        assert not early.woken
        monkeypatch.setenv("HZ_NOW", "2026-12-01T12:00:05Z")
        late = await kernel.tick_once()
        async with kernel.holding(made.id) as held:
            mine = [e for e in held.scan.events if e.turn == first.turn]
        await kernel.close()
    assert [w.heinzel for w in late.woken] == [made.id]
    resumed = [e.data for e in mine if e.kind == "turn.resumed"]
    assert [r["woken_by"] for r in resumed] == ["timer"]
    kinds = [e.kind for e in mine]
    assert kinds.count("turn.waiting") == 1 and kinds.count("turn.finished") == 1
    finished = next(e for e in mine if e.kind == "turn.finished").data
    assert finished["disposition"] == "drafted", (finished.get("reason"), finished.get("step"))
    assert "fixed the login bug" in (world.reports / "digest.md").read_text()
    assert len(stub.requests) == 2
