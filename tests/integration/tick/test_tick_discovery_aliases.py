"""Discovery against aliases: a source is the file it is, not how a path spells it.

A proposed input widens only onto the very file hz discovered (a ``..``
after a link, or another branch of a team file, is not it: ``HZC050``), and
a declined file stays declined under a link, a hard link or a new name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from time_machine import TimeMachineFixture

from hz_kernel.contracts import ContractError
from hz_kernel.tick.discovery import discovery_path
from hz_kernel.tick.report import TickReport
from tests.integration.tick.discovery_helpers import (
    declined_first_proposal,
    discovering,
    events_of,
    team_discovering,
    team_repository,
)
from tests.integration.tick.tick_helpers import approved, open_kernel
from tests.support.homes import World


def _with_input(text: str, name: str, spec: dict[str, object]) -> str:
    return text.replace("    notes:\n", f"    {name}: {json.dumps(spec)}\n    notes:\n", 1)


async def test_a_link_and_dot_dot_do_not_pass_off_a_secret_file_as_discovered(
    world: World, clock: TimeMachineFixture, tmp_path_factory: pytest.TempPathFactory
) -> None:
    incidents = world.root / "incidents"
    incidents.mkdir()
    (incidents / "incident-z.md").write_text("- the discovered one\n")
    secret = tmp_path_factory.mktemp("secret")
    (secret / "x").mkdir()
    (secret / "incident-z.md").write_text("- not under any hint\n")
    (incidents / "link").symlink_to(secret / "x")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    text = discovering("weekly", ["incidents/incident*.md"])
    heinzel = await approved(kernel, text)
    await kernel.tick_once()
    found = [e["data"]["source"] for e in events_of(world, heinzel, "source.discovered")]  # type: ignore[index]
    assert found == [str(incidents / "incident-z.md")]
    spec = {"source": "files", "method": "glob",
            "args": {"root": "incidents/link/..", "pattern": "incident-z.md"}}  # fmt: skip
    with pytest.raises(ContractError) as refused:
        await kernel.amend(ref="weekly", text=_with_input(text, "z", spec), by="heinzel")
    assert refused.value.code == "HZC050"
    # the input that reads the discovered file itself is still the heinzel's to propose
    spec["args"] = {"root": "incidents", "pattern": "incident-z.md"}
    amended = await kernel.amend(ref="weekly", text=_with_input(text, "z", spec), by="heinzel")
    await kernel.close()
    assert amended.widens == ['inputs: adds "z", a discovered source']


async def test_a_declined_file_is_not_discovered_again_under_another_name(
    world: World, clock: TimeMachineFixture
) -> None:
    incidents = world.root / "incidents"
    (incidents / "sub").mkdir(parents=True)
    declined = incidents / "incident-a.md"
    declined.write_text("- a\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/**/*.md"]))
    await declined_first_proposal(kernel, "weekly")
    (incidents / "incident-link.md").symlink_to(declined)
    os.link(declined, incidents / "sub" / "incident-hard.md")
    (incidents / "incident-new.md").write_text("- new\n")
    clock.move_to("2026-12-02T09:00:00Z")
    await kernel.tick_once()
    await kernel.close()
    found = [e["data"]["source"] for e in events_of(world, heinzel, "source.discovered")]  # type: ignore[index]
    assert found == [str(declined), str(incidents / "incident-new.md")]


async def test_a_new_file_named_as_a_declined_input_is_proposed_under_another_name(
    world: World, clock: TimeMachineFixture
) -> None:
    incidents = world.root / "incidents"
    (incidents / "2027").mkdir(parents=True)
    (incidents / "incident-a.md").write_text("- a\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/**/*.md"]))
    assert '"incident-a":' in (await declined_first_proposal(kernel, "weekly")).text
    (incidents / "2027" / "incident-a.md").write_text("- another a\n")
    clock.move_to("2026-12-02T09:00:00Z")
    woken = await kernel.tick_once()
    assert [w.causes for w in woken.woken] == [["discovered"]]
    again = (await kernel.contract("weekly")).pending
    await kernel.close()
    assert again is not None and again.by == "heinzel"
    assert 'inputs: adds "incident-a-2", a discovered source' in again.widens
    assert str(incidents / "2027") in again.text
    assert len(events_of(world, heinzel, "amendment.proposed")) == 2


async def test_another_branch_of_a_discovered_team_file_is_a_widening(
    world: World, clock: TimeMachineFixture
) -> None:
    bare, _ = team_repository(world)
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    text = team_discovering("team:docs/**/*.md")
    await approved(kernel, text)
    await kernel.tick_once()
    await kernel.tick_once()
    pending = (await kernel.contract("weekly")).pending
    assert pending is not None
    args = {"repo": str(bare), "path": "docs/incidents/checkout.md", "branch": "secret"}
    spec = {"source": "git", "method": "file", "args": args}
    with pytest.raises(ContractError) as refused:
        await kernel.amend(ref="weekly", text=_with_input(text, "other", spec), by="heinzel")
    await kernel.close()
    assert refused.value.code == "HZC050" and '"other"' in refused.value.message


async def discover_files(
    world: World, clock: TimeMachineFixture, incidents: Path, names: tuple[str, ...]
) -> tuple[list[str], TickReport]:
    """Files ``names`` in a new folder, one tick of a heinzel discovering ``incidents/*.md``:
    the sources it recorded and the tick's report."""
    incidents.mkdir()
    for name in names:
        (incidents / name).write_text("- x\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/*.md"]))
    report = await kernel.tick_once()
    await kernel.close()
    found = [e["data"]["source"] for e in events_of(world, heinzel, "source.discovered")]  # type: ignore[index]
    return found, report


async def test_a_file_with_an_e_mail_like_name_costs_a_line_not_the_rest_of_the_hint(
    world: World, clock: TimeMachineFixture
) -> None:
    incidents = world.root / "incidents"
    found, report = await discover_files(
        world, clock, incidents, ("a.md", "from-bob@acme.com.md", "z.md")
    )
    assert found == [str(incidents / "a.md"), str(incidents / "z.md")]
    assert [p.code for p in report.problems] == ["HZT036"]
    assert "acme" not in report.problems[0].message
    assert report.problems[0].place == "weekly: incidents/*.md"


async def test_a_discovery_file_that_is_a_folder_costs_a_line_not_the_tick(
    world: World, clock: TimeMachineFixture
) -> None:
    (world.root / "incidents").mkdir()
    (world.root / "incidents" / "incident-a.md").write_text("- a\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/*.md"]))
    discovery_path(world.home / "heinzel").mkdir()
    report = await kernel.tick_once()
    await kernel.close()
    assert [w.causes for w in report.woken] == [["source-changed", "created"]]
    assert [p.code for p in report.problems] == ["HZT037"]
    assert len(events_of(world, heinzel, "source.discovered")) == 1


async def test_a_day_records_at_most_its_share_of_new_sources_and_the_rest_later(
    world: World, clock: TimeMachineFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hz_kernel.commands.tick.MAX_NEW_PER_DAY", 2)
    incidents = world.root / "incidents"
    incidents.mkdir()
    for n in range(5):
        (incidents / f"incident-{n}.md").write_text(f"- {n}\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/*.md"]))
    counts, codes = [], []
    for day in ("2026-12-01", "2026-12-02", "2026-12-03"):
        clock.move_to(f"{day}T09:00:00Z")
        report = await kernel.tick_once()
        codes.append([p.code for p in report.problems])
        counts.append(len(events_of(world, heinzel, "source.discovered")))
    await kernel.close()
    assert counts == [2, 4, 5]
    assert codes == [["HZT038"], ["HZT038"], []]


async def test_files_with_control_or_bidi_characters_in_their_names_are_one_line(
    world: World, clock: TimeMachineFixture
) -> None:
    incidents = world.root / "incidents"
    found, report = await discover_files(
        world,
        clock,
        incidents,
        ("a.md", "esc\x1b[31m.md", "new\nline.md", "bel\x07.md", "rev\u202egpj.md"),
    )
    assert found == [str(incidents / "a.md")]
    assert [p.code for p in report.problems] == ["HZT039"]
    assert "4 file(s)" in report.problems[0].message
    assert "\x1b" not in report.problems[0].message


async def test_a_hint_that_walks_too_many_entries_is_one_line(
    world: World, clock: TimeMachineFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hz_kernel.tick.discovery.MAX_WALKED", 20)
    wide = world.root / "wide"
    for n in range(30):
        (wide / f"d{n}").mkdir(parents=True)
        (wide / f"d{n}" / "x.txt").write_text("- x\n")
    (world.root / "incidents").mkdir()
    (world.root / "incidents" / "incident-a.md").write_text("- a\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["wide/**/*.conf", "incidents/*.md"]))
    report = await kernel.tick_once()
    await kernel.close()
    found = [e["data"]["source"] for e in events_of(world, heinzel, "source.discovered")]  # type: ignore[index]
    assert found == [str(world.root / "incidents" / "incident-a.md")]
    assert [p.code for p in report.problems] == ["HZT024"]
    assert "wide/**/*.conf" in report.problems[0].message


async def test_a_discovered_file_replaced_by_a_folder_before_its_turn_is_not_proposed(
    world: World, clock: TimeMachineFixture
) -> None:
    incidents = world.root / "incidents"
    incidents.mkdir()
    path = incidents / "incident-a.md"
    path.write_text("- a\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/*.md"]))
    await kernel.tick_once()  # the first turn; the source is recorded, its wake owed
    path.unlink()
    path.mkdir()
    woken = await kernel.tick_once()
    await kernel.close()
    assert [w.causes for w in woken.woken] == [["discovered"]]
    assert events_of(world, heinzel, "amendment.proposed") == []
