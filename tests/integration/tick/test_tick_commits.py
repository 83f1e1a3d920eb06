"""A commit wakes exactly the heinzels that watch its repository; an idle tick costs one query."""

from __future__ import annotations

from pathlib import Path

from tick_helpers import approved, contract, open_kernel, spine_kinds
from time_machine import TimeMachineFixture

from tests.support.homes import World, git


def _repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    _commit(path, "first", "2026-11-02T10:00:00+00:00")
    return path


def _commit(repo: Path, message: str, when: str) -> None:
    (repo / f"{message}.txt").write_text(message)
    git(repo, "add", ".", when=when)
    git(repo, "commit", "-q", "-m", message, when=when)


def _watching(name: str, repo: Path) -> str:
    inputs = {"commits": {"source": "git", "method": "commits", "args": {"repo": str(repo)}}}
    return contract(name, inputs=inputs, document="changes")


async def test_a_commit_moves_exactly_the_heinzels_watching_that_repository(
    world: World, clock: TimeMachineFixture
) -> None:
    api, web = _repo(world.root / "api"), _repo(world.root / "web")
    kernel = await open_kernel(world.home)
    try:
        ids = {
            name: await approved(kernel, _watching(name, repo))
            for name, repo in (("api-log", api), ("api-notes", api), ("web-log", web))
        }
        clock.move_to("2026-12-01T10:00:00Z")
        first = await kernel.tick_once()
        assert first.fetches == 2
        assert sorted(w.name for w in first.woken) == ["api-log", "api-notes", "web-log"]
        assert all(w.causes == ["source-changed", "created"] for w in first.woken)

        clock.move_to("2026-12-01T10:01:00Z")
        idle = await kernel.tick_once()
        assert (idle.due, idle.woken, idle.skipped) == (0, [], [])
        assert idle.fetches == 2 and idle.index_queries == 1 and idle.spines_opened == 0

        _commit(api, "second", "2026-12-01T10:01:30+00:00")
        clock.move_to("2026-12-01T10:02:00Z")
        moved = await kernel.tick_once()
        assert sorted(w.name for w in moved.woken) == ["api-log", "api-notes"]
        assert moved.fetches == 2 and moved.spines_opened == 2
        for woken in moved.woken:
            (key,) = woken.keys
            assert key.startswith(f"{woken.heinzel}@commits:")
        assert spine_kinds(world.home, ids["web-log"]).count("turn.started") == 1
        assert spine_kinds(world.home, ids["api-log"]).count("turn.finished") == 2
    finally:
        await kernel.close()
