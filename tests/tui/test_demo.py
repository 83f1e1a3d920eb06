"""``hz demo``'s world, built for real: git history, documents, approved heinzels, a moving repo."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hz_kernel import demo
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel

HZ = Path(sys.executable).parent / "hz"


def commits(world: demo.DemoWorld) -> list[str]:
    return world.git("log", "--format=%s").splitlines()


async def test_the_demo_world_is_realistic_and_keeps_moving(tmp_path: Path) -> None:
    said: list[str] = []
    world = await demo.build(demo.demo_root(str(tmp_path / "demo")), say=said.append)
    assert said[0].startswith("building a demo home in")
    merges = world.git("log", "--merges", "--format=%s").splitlines()
    assert len(merges) == 4 and all(m.startswith("Merge pull request #4") for m in merges)
    assert len(commits(world)) == len(demo.HISTORY)
    home = Home.resolve(world.home.root)
    assert home.settings.documents.resolve("digest.md") == world.workspace / "digest.md"
    kernel = await Kernel.open(home)
    try:
        rows = (await kernel.list_heinzels()).items
        assert sorted(row.name for row in rows) == [
            "changelog",
            "incident-digest",
            "notes-digest",
            "weekly-report",
        ]
        assert all(row.contract_version == 1 for row in rows)
        first = next(row for row in rows if row.name == "notes-digest")
    finally:
        await kernel.close()
    spine = home.heinzel_dir(first.id) / "session.jsonl"
    kinds = [orjson.loads(line)["kind"] for line in spine.read_bytes().splitlines()]
    assert "draft.placed" in kinds and "approval.observed" in kinds
    digest = (world.workspace / "digest.md").read_text()
    assert "🧝 DRAFT" not in digest and demo.EDITED_OUT not in digest

    stop = asyncio.Event()
    before = len(commits(world))
    job = asyncio.create_task(demo.keep_committing(world, stop, every=0.05))
    deadline = asyncio.get_running_loop().time() + 10
    while len(commits(world)) < before + 4:
        assert asyncio.get_running_loop().time() < deadline, "the demo repository stood still"
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(job, timeout=5)
    assert world.git("log", "-1", "--merges", "--format=%s").startswith("Merge pull request #45")


def test_the_demo_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(HzError) as caught:
        demo.demo_root(str(tmp_path))
    assert caught.value.code == "HZU070" and caught.value.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


@pytest.mark.parametrize("args", [[], ["demo"]])
def test_the_cockpit_without_a_terminal_is_a_usage_error(args: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [str(HZ), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "HZ_HOME": str(tmp_path)},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("HZU062: ") and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
