"""Chained heinzels: an input ``source: heinzel, method: approved_output`` (issue 12 item 6).

The reader sees the upstream's last approved text and never a draft that
still waits, and the upstream's approval wakes the reader.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from tick_helpers import approved, contract, made, open_kernel

from hz_kernel.adapters.sources import SourceRequest, default_registry
from hz_kernel.engine.wakes import Wake
from hz_kernel.errors import HzError
from tests.support.homes import World

NOW = "2026-12-01T09:00:00Z"
FILES = {"source": "files", "method": "glob", "args": {"pattern": "*.md", "root": "notes"}}


def _reads(upstream: str, output: str | None = None) -> dict[str, dict[str, Any]]:
    args = {"heinzel": upstream, "output": output or upstream}
    return {"upstream": {"source": "heinzel", "method": "approved_output", "args": args}}


def _tick(world: World) -> dict[str, Any]:
    """One tick's report (it exits 1 when it has problems, which some tests want)."""
    done = world.hz("tick", "--once", "--json", check=False, HZ_NOW=NOW)
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == (1 if report["problems"] else 0), done.stderr
    return report


def _woken(report: dict[str, Any]) -> list[str]:
    return [str(w["name"]) for w in report["woken"]]


def _gathered(world: World, heinzel_id: str, turn: str) -> str:
    body = world.home / "heinzel" / heinzel_id / "turns" / f"{turn}.jsonl"
    records = [json.loads(line) for line in body.read_text().splitlines()]
    (found,) = [r for r in records if r["type"] == "input" and r["name"] == "upstream"]
    return str(found["content"])


def test_issue12_item6_a_reader_never_sees_a_draft_and_wakes_on_the_approval(
    world: World,
) -> None:
    """Upstream drafts: the reader sees nothing new. Upstream approved: the reader wakes
    (in the very tick that notices the approval) and its gather holds the approved text.
    The upstream's next draft wakes the reader no more."""
    made(world, "top", contract("top", inputs={"notes": FILES}), NOW)
    reader = made(world, "reader", contract("reader", inputs=_reads("top")), NOW)

    first = _tick(world)
    assert first["problems"] == []
    assert _woken(first) == ["top"], "a reader of an upstream that approved nothing sleeps"
    document = world.root / "top.md"
    assert "DRAFT" in document.read_text()

    waiting = _tick(world)
    assert waiting["problems"] == [] and _woken(waiting) == []

    asked = json.loads(world.hz("heinzel", "wake", "reader", "--json", HZ_NOW=NOW).stdout)
    assert "login bug" not in _gathered(world, reader, asked["turn"]), "a draft was read"

    edited = [line for line in document.read_text().splitlines() if "DRAFT" not in line]
    text = "\n".join(edited).replace("shipped search", "shipped search, with filters")
    document.write_text(text + "\n")

    approved = _tick(world)
    assert approved["problems"] == []
    (woken,) = [w for w in approved["woken"] if w["name"] == "reader"]
    assert woken["causes"] == ["source-changed"]
    assert woken["keys"][0].startswith(f"{reader}@upstream:")
    gathered = _gathered(world, reader, woken["turn"])
    assert "shipped search, with filters" in gathered
    assert "DRAFT" not in gathered

    assert "reader" not in _woken(_tick(world)), "one approval wakes the reader once"

    (world.notes / "wednesday.md").write_text("# Wednesday\n- paired on the release\n")
    redrafted = _tick(world)
    assert _woken(redrafted) == ["top"], "the upstream's next draft moves nothing for the reader"
    assert "paired on the release" in document.read_text()


def test_issue12_item6_an_unknown_upstream_or_output_is_a_coded_problem(world: World) -> None:
    """A reader naming a heinzel or an output that does not exist gets a coded error naming it."""
    made(world, "top", contract("top", inputs={"notes": FILES}), NOW)
    made(world, "nobody-reader", contract("nobody-reader", inputs=_reads("nobody")), NOW)
    made(world, "typo-reader", contract("typo-reader", inputs=_reads("top", "tpo")), NOW)
    problems = {(p["code"], p["place"]) for p in _tick(world)["problems"]}
    assert problems == {
        ("HZT110", "nobody-reader: heinzel:approved_output"),
        ("HZT111", "typo-reader: heinzel:approved_output"),
    }


def test_a_reader_keeps_its_upstream_when_the_upstream_is_renamed(world: World) -> None:
    """The reader's contract names the upstream's old name: its wake on the upstream's
    approval, its turn and the graph still find the upstream under its new name."""
    made(world, "top", contract("top", inputs={"notes": FILES}), NOW)
    made(world, "reader", contract("reader", inputs=_reads("top")), NOW)
    _tick(world)
    world.hz("heinzel", "rename", "top", "summit", HZ_NOW=NOW)
    document = world.root / "top.md"
    edited = [line for line in document.read_text().splitlines() if "DRAFT" not in line]
    document.write_text("\n".join(edited) + "\n")

    approved = _tick(world)
    graph = json.loads(world.hz("graph", "--json", HZ_NOW=NOW).stdout)

    assert approved["problems"] == [] and "reader" in _woken(approved)
    edges = {(e["source"], e["relation"], e["target"]) for e in graph["edges"]}
    assert ("heinzel:reader", "depends_on", "heinzel:summit") in edges
    assert not any(e[2] == "heinzel:top" for e in edges)
    taken = world.hz("heinzel", "rename", "reader", "top", check=False, HZ_NOW=NOW)
    assert taken.returncode == 2 and taken.stderr.startswith("HZU244: top: 'top' is the former")


async def test_issue12_item6_the_approved_text_outlives_its_body_only_while_the_document_keeps_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text comes from the approval turn's body; with the body gone, from the document
    while its section still holds that text; else a coded error, never the wrong text."""
    monkeypatch.setenv("HZ_NOW", NOW)
    kernel = await open_kernel(world.home)
    try:
        top = await approved(kernel, contract("top", inputs={"notes": FILES}))
        await kernel.run_wakes(top, [Wake(cause="asked", key=f"{top}@first")])
        (draft,) = (await kernel.drafts()).items
        await kernel.approve(ref=draft.key)
    finally:
        await kernel.close()
    registry = default_registry(base_dir=world.root, heinzel_root=world.home / "heinzel")
    request = SourceRequest(**_reads("top")["upstream"])
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    first = registry.fetch(request, now=now)
    assert "shipped search" in first.content["approved"]
    again = registry.fetch(request, now=now, previous=first)
    assert again.not_modified and again.facets == first.facets

    for body in (world.home / "heinzel" / top / "turns").iterdir():
        body.unlink()
    from_document = registry.fetch(request, now=now)
    assert from_document.facets == first.facets
    assert "shipped search" in from_document.content["approved"]

    document = world.root / "top.md"
    document.write_text(document.read_text().replace("shipped search", "shipped nothing"))
    with pytest.raises(HzError) as caught:
        registry.fetch(request, now=now)
    assert caught.value.code == "HZT112"
