"""Discovery: the daily job over a contract's ``discover`` hints, with real files and git.

A new file under a hint is recorded once (``source.discovered``) and wakes
its heinzel once (cause ``discovered``); the turn proposes reading it, as
the local model does; the user approves (the next version reads it) or
declines (never proposed or woken again). Hostile folders and an
unreachable team repository cost one line of the tick, never the tick.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from time_machine import TimeMachineFixture

from hz_kernel.contracts import ContractError
from hz_kernel.kernel import Kernel
from hz_kernel.tick.discovery import DiscoveryState, discovery_path
from tests.integration.tick.discovery_helpers import (
    discovering,
    events_of,
    push,
    team_discovering,
    team_repository,
)
from tests.integration.tick.tick_helpers import approved, open_kernel, write_settings
from tests.support.homes import World


def _discovered_turns(world: World, heinzel: str) -> list[dict[str, object]]:
    started = events_of(world, heinzel, "turn.started")
    return [e for e in started if "discovered" in e["data"]["causes"]]  # type: ignore[index]


async def _report(world: World, clock: TimeMachineFixture, when: str) -> Kernel:
    clock.move_to(when)
    kernel = await open_kernel(world.home)
    await kernel.tick_once()  # the first turn (created) and the first day's discovery
    return kernel


async def test_a_new_file_under_a_hint_wakes_once_and_is_proposed_once(
    world: World, clock: TimeMachineFixture
) -> None:
    incidents = world.root / "incidents" / "2026"
    incidents.mkdir(parents=True)
    (incidents / "incident-login.md").write_text("# Login\n- 20 min outage\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/**/incident*.md"]))
    first = await kernel.tick_once()  # its first turn drafts; the job records the source
    assert [w.causes for w in first.woken] == [["source-changed", "created"]]
    second = await kernel.tick_once()  # the discovered source has a turn of its own
    assert [w.causes for w in second.woken] == [["discovered"]]
    found = events_of(world, heinzel, "source.discovered")
    assert [e["data"] for e in found] == [
        {"source": str(incidents / "incident-login.md"), "hint": "incidents/**/incident*.md"}
    ]
    shown = [a for a in (await kernel.show("weekly")).amendments if a.status == "pending"]
    assert [(a.by, a.reason is not None) for a in shown] == [("heinzel", True)]
    pending = (await kernel.contract("weekly")).pending
    assert pending is not None and pending.by == "heinzel"
    assert any("a discovered source" in w for w in pending.widens)
    assert "incident-login" in pending.text
    await kernel.reject(ref=f"weekly@amendment:{pending.proposal}")

    # the same day, and after a restart: the job does not run again, nothing wakes
    (incidents / "incident-checkout.md").write_text("# Checkout\n- card errors\n")
    clock.move_to("2026-12-01T18:00:00Z")
    assert (await kernel.tick_once()).woken == []
    await kernel.close()
    kernel = await open_kernel(world.home)
    assert (await kernel.tick_once()).woken == []

    # the next day (the user's zone): only the new file, once
    clock.move_to("2026-12-02T06:00:00Z")
    next_day = await kernel.tick_once()
    assert [w.causes for w in next_day.woken] == [["discovered"]]
    assert (await kernel.tick_once()).woken == []
    clock.move_to("2026-12-03T06:00:00Z")
    assert (await kernel.tick_once()).woken == []
    await kernel.close()
    sources = [e["data"]["source"] for e in events_of(world, heinzel, "source.discovered")]  # type: ignore[index]
    assert sources == [
        str(incidents / "incident-login.md"),
        str(incidents / "incident-checkout.md"),
    ]
    assert len(_discovered_turns(world, heinzel)) == 2
    assert DiscoveryState.load(discovery_path(world.home / "heinzel")).owed == []


async def test_an_approved_proposal_is_read_by_the_next_version(
    world: World, clock: TimeMachineFixture
) -> None:
    (world.root / "incidents").mkdir()
    (world.root / "incidents" / "incident-checkout.md").write_text("- checkout cards declined\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/incident*.md"]))
    await kernel.tick_once()
    await kernel.tick_once()
    pending = (await kernel.contract("weekly")).pending
    assert pending is not None  # (the first turn's draft waits beside it: name the amendment)
    decision = await kernel.approve(ref=f"weekly@amendment:{pending.proposal}")
    assert decision.version == 2
    view = await kernel.contract("weekly")
    assert '"incident-checkout": {"source": "files"' in (view.text or "")
    assert [e["data"]["by"] for e in events_of(world, heinzel, "contract.amended")] == ["heinzel"]  # type: ignore[index]
    # the file moves: version 2 reads it
    (world.root / "incidents" / "incident-checkout.md").write_text("- checkout fixed\n")
    clock.move_to("2026-12-01T10:00:00Z")
    woken = await kernel.tick_once()
    await kernel.close()
    assert [w.causes for w in woken.woken] == [["source-changed"]]
    assert "checkout fixed" in (world.root / "weekly.md").read_text()


async def test_a_declined_source_is_never_proposed_or_woken_again(
    world: World, clock: TimeMachineFixture
) -> None:
    (world.root / "incidents").mkdir()
    path = world.root / "incidents" / "incident-checkout.md"
    path.write_text("- checkout\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/*.md"]))
    await kernel.tick_once()
    await kernel.tick_once()
    proposal = (await kernel.contract("weekly")).pending
    assert proposal is not None
    text = proposal.text
    await kernel.reject(ref=f"weekly@amendment:{proposal.proposal}")
    declined = events_of(world, heinzel, "amendment.declined")
    assert declined[0]["data"]["sources"] == ["incident-checkout", str(path)]  # type: ignore[index]
    # the heinzel proposing it again, under any input name, is refused
    with pytest.raises(ContractError) as again:
        await kernel.amend(
            ref="weekly", text=text.replace('"incident-checkout":', "cko:"), by="heinzel"
        )
    assert again.value.code == "HZC108" and str(path) in again.value.message
    # the discovery job, whatever the days, never wakes for it again
    discovery_path(world.home / "heinzel").unlink()  # even with its memory lost
    for day in ("2026-12-02", "2026-12-03"):
        clock.move_to(f"{day}T09:00:00Z")
        assert (await kernel.tick_once()).woken == []
    await kernel.close()
    assert len(events_of(world, heinzel, "source.discovered")) == 1
    assert len(events_of(world, heinzel, "amendment.proposed")) == 1


async def test_a_heinzel_adding_an_input_it_did_not_discover_is_still_refused(
    world: World, clock: TimeMachineFixture
) -> None:
    (world.root / "incidents").mkdir()
    (world.root / "incidents" / "incident-a.md").write_text("- a\n")
    (world.root / "secret.md").write_text("- not under any hint\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    await approved(kernel, discovering("weekly", ["incidents/*.md"]))
    await kernel.tick_once()
    await kernel.tick_once()
    pending = (await kernel.contract("weekly")).pending
    assert pending is not None
    await kernel.reject(ref=f"weekly@amendment:{pending.proposal}")
    current = (await kernel.contract("weekly")).text or ""
    added = current.replace(
        "    notes:\n",
        '    secret: {source: files, method: glob, args: {pattern: "secret.md"}}\n    notes:\n',
    )
    with pytest.raises(ContractError) as refused:
        await kernel.amend(ref="weekly", text=added, by="heinzel")
    await kernel.close()
    assert refused.value.code == "HZC050" and '"secret"' in refused.value.message


async def test_a_source_discovered_under_a_hint_the_user_removed_is_not_proposed(
    world: World, clock: TimeMachineFixture
) -> None:
    (world.root / "incidents").mkdir()
    (world.root / "incidents" / "incident-a.md").write_text("- a\n")
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    text = discovering("weekly", ["incidents/*.md"])
    heinzel = await approved(kernel, text)
    await kernel.tick_once()  # the first turn; the source is recorded and its wake owed
    assert DiscoveryState.load(discovery_path(world.home / "heinzel")).owed
    amended = await kernel.amend(ref="weekly", text=text.replace('["incidents/*.md"]', "[]"))
    await kernel.approve(ref=f"weekly@amendment:{amended.proposal}")
    clock.move_to("2026-12-01T09:05:00Z")
    woken = await kernel.tick_once()
    await kernel.close()
    assert [w.causes for w in woken.woken] == [["discovered"]]
    assert [e["data"]["by"] for e in events_of(world, heinzel, "amendment.proposed")] == ["user"]  # type: ignore[index]


async def test_the_spending_cap_keeps_a_discovered_wake_for_later(
    world: World, clock: TimeMachineFixture
) -> None:
    (world.root / "incidents").mkdir()
    (world.root / "incidents" / "incident-a.md").write_text("- a\n")
    write_settings(world.home, max_usd_per_day=0.0)
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, discovering("weekly", ["incidents/*.md"]))
    capped = await kernel.tick_once()
    await kernel.close()
    key = str(events_of(world, heinzel, "source.discovered")[0]["key"])
    assert [(s.name, s.reason) for s in capped.skipped] == [("weekly", "cap")]
    assert key not in capped.skipped[0].keys
    assert DiscoveryState.load(discovery_path(world.home / "heinzel")).owed == [(heinzel, key)]
    # with spending allowed again, the wake that waited runs
    settings = world.home / "hz.toml"
    settings.write_text(settings.read_text().replace("max_usd_per_day = 0.0", ""))
    clock.move_to("2026-12-01T10:00:00Z")
    kernel = await open_kernel(world.home)
    later = await kernel.tick_once()
    await kernel.close()
    assert [w.keys for w in later.woken] == [[key]]
    assert len(events_of(world, heinzel, "amendment.proposed")) == 1


async def test_hostile_folders_cost_a_line_never_the_tick(
    world: World, clock: TimeMachineFixture
) -> None:
    hostile = world.root / "hostile"
    (hostile / "deep").mkdir(parents=True)
    os.mkfifo(hostile / "incident-fifo.md")
    (hostile / "loop").symlink_to(hostile / "loop")
    (hostile / "up").symlink_to(hostile)
    (hostile / "deep" / "incident-deep.md").write_text("- deep\n")
    locked = hostile / "locked"
    locked.mkdir()
    (locked / "incident-hidden.md").write_text("- hidden\n")
    locked.chmod(0)
    try:
        clock.move_to("2026-12-01T09:00:00Z")
        kernel = await open_kernel(world.home)
        heinzel = await approved(
            kernel, discovering("weekly", ["hostile/**/incident*.md", "missing/*.md"])
        )
        other = await approved(kernel, discovering("other", ["notes/monday.md"]))
        report = await kernel.tick_once()
        await kernel.close()
    finally:
        locked.chmod(0o700)
    assert sorted(w.name for w in report.woken) == ["other", "weekly"]
    sources = [e["data"]["source"] for e in events_of(world, heinzel, "source.discovered")]  # type: ignore[index]
    readable = [str(hostile / "deep" / "incident-deep.md")]
    if os.geteuid() == 0:  # root lists a folder whatever its mode
        readable.append(str(locked / "incident-hidden.md"))
    assert sources == readable  # no FIFO, nothing through a link to a folder
    assert [p.code for p in report.problems] == ["HZT020"]
    assert "missing/*.md" in report.problems[0].message
    assert report.problems[0].place is not None and report.problems[0].place.startswith("weekly")
    assert [e["data"]["source"] for e in events_of(world, other, "source.discovered")] == [  # type: ignore[index]
        str(world.notes / "monday.md")
    ]


async def test_a_team_hints_file_is_proposed_as_a_git_file_input_and_then_read(
    world: World, clock: TimeMachineFixture
) -> None:
    bare, work = team_repository(world)
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, team_discovering("team:docs/**/*.md"))
    first = await kernel.tick_once()
    second = await kernel.tick_once()
    assert first.problems == [] and second.problems == []
    assert [e["data"] for e in events_of(world, heinzel, "source.discovered")] == [
        {"source": "team:docs/incidents/checkout.md", "hint": "team:docs/**/*.md"}
    ]
    assert [w.causes for w in second.woken] == [["discovered"]]
    pending = (await kernel.contract("weekly")).pending
    assert pending is not None and pending.by == "heinzel"
    assert 'inputs: adds "checkout", a discovered source' in pending.widens
    reads = {"repo": str(bare), "path": "docs/incidents/checkout.md"}
    line = json.dumps({"source": "git", "method": "file", "args": reads})
    assert f'"checkout": {line}' in pending.text
    assert (await kernel.approve(ref=f"weekly@amendment:{pending.proposal}")).version == 2
    # version 2 reads the file: an edit pushed to the team repository wakes it, once
    (work / "docs" / "incidents" / "checkout.md").write_text("- checkout fixed by theo\n")
    push(work, "fix")
    clock.move_to("2026-12-01T10:00:00Z")
    moved = await kernel.tick_once()
    clock.move_to("2026-12-01T10:05:00Z")
    still = await kernel.tick_once()
    await kernel.close()
    assert [w.causes for w in moved.woken] == [["source-changed"]]
    assert still.woken == []
    assert "checkout fixed by theo" in (world.root / "weekly.md").read_text()
    # the file is fetched into the inventory cache; main is untouched, nothing else pushed
    heads = subprocess.run(
        ["git", f"--git-dir={bare}", "for-each-ref", "--format=%(refname)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert "refs/heads/main" in heads and not any("inventory" in h for h in heads)


async def test_a_declined_team_file_is_never_proposed_or_woken_again(
    world: World, clock: TimeMachineFixture
) -> None:
    team_repository(world)
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, team_discovering("team:docs/**/*.md"))
    await kernel.tick_once()
    await kernel.tick_once()
    proposal = (await kernel.contract("weekly")).pending
    assert proposal is not None
    await kernel.reject(ref=f"weekly@amendment:{proposal.proposal}")
    declined = events_of(world, heinzel, "amendment.declined")
    assert declined[0]["data"]["sources"] == ["checkout", "team:docs/incidents/checkout.md"]  # type: ignore[index]
    # under another name, and with the repository spelled another way, it is refused
    text = proposal.text.replace('"checkout":', "cko:").replace(
        f'"repo": "{world.root}/team.git"', f'"repo": "{world.root}/./team.git"'
    )
    assert "/./team.git" in text
    with pytest.raises(ContractError) as again:
        await kernel.amend(ref="weekly", text=text, by="heinzel")
    assert again.value.code == "HZC108" and "team:docs/incidents/checkout.md" in again.value.message
    discovery_path(world.home / "heinzel").unlink()
    for day in ("2026-12-02", "2026-12-03"):
        clock.move_to(f"{day}T09:00:00Z")
        assert (await kernel.tick_once()).woken == []
    await kernel.close()
    assert len(events_of(world, heinzel, "source.discovered")) == 1
    assert len(events_of(world, heinzel, "amendment.proposed")) == 1


async def test_a_team_file_the_heinzel_already_reads_is_not_discovered(
    world: World, clock: TimeMachineFixture
) -> None:
    bare, _ = team_repository(world)
    reads = {"repo": f"{bare.parent}/./team.git", "path": "docs/incidents/checkout.md"}
    line = json.dumps({"source": "git", "method": "file", "args": reads})
    text = team_discovering("team:docs/**/*.md").replace(
        "  inputs:\n", f"  inputs:\n    runbook: {line}\n"
    )
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    heinzel = await approved(kernel, text)
    report = await kernel.tick_once()
    await kernel.close()
    assert report.problems == []
    assert events_of(world, heinzel, "source.discovered") == []


async def test_an_unreachable_team_repository_is_one_line(
    world: World, clock: TimeMachineFixture
) -> None:
    settings = world.home / "hz.toml"
    missing = world.root / "gone.git"
    settings.write_text(settings.read_text() + f'\n[team]\nhandle = "priya"\nrepo = "{missing}"\n')
    clock.move_to("2026-12-01T09:00:00Z")
    kernel = await open_kernel(world.home)
    await approved(kernel, team_discovering("team:docs/*.md"))
    report = await kernel.tick_once()
    await kernel.close()
    assert "HZS105" in [p.code for p in report.problems]
    problem = next(p for p in report.problems if "discovery" in p.message)
    assert "\n" not in problem.message and "team:docs/*.md" in problem.message
