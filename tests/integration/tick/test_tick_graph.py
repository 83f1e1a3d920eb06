"""Heinzels that read each other's documents wake upstream first."""

from __future__ import annotations

import json

from tick_helpers import approved, contract, open_kernel
from time_machine import TimeMachineFixture

from tests.support.homes import World


def _reads(*names: str) -> dict[str, dict[str, object]]:
    return {
        name: {
            "source": "document",
            "method": "section",
            "args": {"path": f"{name}.md", "anchor": name},
        }
        for name in names
    }


async def test_a_diamond_graph_renders_upstream_first(
    world: World, clock: TimeMachineFixture
) -> None:
    for name in ("top", "left", "right", "bottom"):
        (world.root / f"{name}.md").write_text(f"# {name.title()}\n\nsome {name} text\n")
    daily = "0 9 * * *"
    kernel = await open_kernel(world.home)
    try:
        for name, inputs in (
            ("bottom", _reads("left", "right")),
            ("right", _reads("top")),
            ("left", _reads("top")),
            ("top", {}),
        ):
            await approved(kernel, contract(name, inputs=inputs, schedule=daily))
        clock.move_to("2026-12-01T09:00:30Z")
        report = await kernel.tick_once()
        assert report.problems == []
        assert [(w.name, w.height) for w in report.woken] == [
            ("top", 0),
            ("left", 1),
            ("right", 1),
            ("bottom", 2),
        ]
        started = []
        for woken in report.woken:
            spine = world.home / "heinzel" / woken.heinzel / "session.jsonl"
            events = [json.loads(line) for line in spine.read_text().splitlines()]
            started.append(next(e["ts"] for e in events if e["kind"] == "turn.started"))
            finished = next(e["data"] for e in events if e["kind"] == "turn.finished")
            assert finished["disposition"] != "failed"
        assert started == sorted(started)
    finally:
        await kernel.close()
