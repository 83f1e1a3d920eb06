"""Team benchmark: slot-to-receipt-pushed latency to a local bare repository, and takeover time.

Run: ``python bench/team.py`` (``--tiny`` for the smoke test's run; each
size is an option too). Two homes in this process, Priya (owner) and Theo
(delegate), share one team heinzel on a bare repository on disk; the clock
is pinned and moved one ten-minute tick at a time. Figures:

- the owner's tick at a slot, from its start until the turn's receipt is on
  the remote's ``hz/state`` (lease renewal, the turn with the local model,
  queueing, one push), beside the same slot of a heinzel outside a team and a
  bare ``git push`` of one commit to the same kind of repository;
- how many of the delegate's ticks pass between the owner's last tick and the
  delegate's first turn under the lease it took over (the protocol says 2).

The last line is one JSON object of named figures.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import emit, run, sizes

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel

BASE = datetime(2026, 11, 27, 9, 0, 20, tzinfo=UTC)
TICK = timedelta(minutes=10)
CONTRACT = """---
name: team-status
namespace: {namespace}
hz:
  schedule: "*/10 * * * *"
{team}---
# Team status

### Goal

Keep a short note of the team's week.
"""


def git(*args: str, stdin: bytes | None = None) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
    }
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    done = subprocess.run(["git", *args], input=stdin, capture_output=True, env=env, check=True)
    return done.stdout.decode().strip()


def bare_repo(path: Path) -> Path:
    git("init", "-q", "--bare", str(path))
    return path


def push_one_commit_ms(root: Path, repeat: int) -> float:
    """The baseline: one commit built with plumbing and pushed to a bare repository."""
    remote = bare_repo(root / "baseline.git")
    local = bare_repo(root / "baseline-cache.git")
    samples = []
    parent: list[str] = []
    for index in range(repeat):
        started = time.perf_counter()
        blob = git(f"--git-dir={local}", "hash-object", "-w", "--stdin", stdin=f"{index}".encode())
        tree = git(f"--git-dir={local}", "mktree", stdin=f"100644 blob {blob}\tr.json\n".encode())
        commit = git(f"--git-dir={local}", "commit-tree", tree, *parent, stdin=b"one")
        git(f"--git-dir={local}", "push", "-q", str(remote), f"{commit}:refs/heads/hz/state")
        samples.append((time.perf_counter() - started) * 1000)
        parent = ["-p", commit]
    return statistics.median(samples)


async def open_home(root: Path, handle: str, text: str) -> Kernel:
    root.mkdir(parents=True)
    (root / "hz.toml").write_text(f'[daemon]\ntick_seconds = 600\n[team]\nhandle = "{handle}"\n')
    os.environ["HZ_NOW"] = "2026-11-27T08:00:00Z"
    kernel = await Kernel.open(Home.resolve(root))
    await kernel.new(text=text)
    await kernel.approve(ref="team-status")
    return kernel


async def tick_ms(kernel: Kernel, at: datetime) -> tuple[float, int]:
    os.environ["HZ_NOW"] = at.isoformat()
    started = time.perf_counter()
    report = await kernel.tick_once(now=at)
    assert not report.problems, report.problems
    return (time.perf_counter() - started) * 1000, len(report.woken)


def receipts_on(remote: Path) -> int:
    listed = git(f"--git-dir={remote}", "ls-tree", "-r", "--name-only", "refs/heads/hz/state")
    return sum(1 for line in listed.splitlines() if line.endswith(".turn.finished.json"))


async def bench(root: Path, slots: int) -> dict[str, float | int]:
    remote = bare_repo(root / "team.git")
    team = f'  team:\n    repo: "{remote}"\n    delegates: [theo]\n'
    priya = await open_home(root / "priya", "priya", CONTRACT.format(namespace="team", team=team))
    theo = await open_home(root / "theo", "theo", CONTRACT.format(namespace="team", team=team))
    solo = await open_home(root / "solo", "solo", CONTRACT.format(namespace="me", team=""))
    try:
        pushed, alone = [], []
        for index in range(slots):
            at = BASE + index * TICK
            ms, woken = await tick_ms(priya, at)
            assert woken == 1 and receipts_on(remote) == index + 1
            pushed.append(ms)
            _, held = await tick_ms(theo, at)
            assert held == 0
            ms, woken = await tick_ms(solo, at)
            assert woken == 1
            alone.append(ms)
        waited = 0
        for index in range(slots, slots + 10):
            waited += 1
            if (await tick_ms(theo, BASE + index * TICK))[1]:
                break
        return {
            "slot_to_receipt_pushed_ms": statistics.median(pushed),
            "slot_without_team_ms": statistics.median(alone),
            "takeover_ticks": waited,
        }
    finally:
        for kernel in (priya, theo, solo):
            await kernel.close()


def main() -> None:
    size = sizes(__doc__, {"slots": 20, "pushes": 20}, {"slots": 2, "pushes": 2})
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        baseline = push_one_commit_ms(root, int(size.pushes))
        figures = asyncio.run(bench(root, int(size.slots)))
    print(
        f"slot → receipt on hz/state  {figures['slot_to_receipt_pushed_ms']:.0f} ms (median of "
        f"{size.slots}; lease, turn, queue, push)   same slot outside a team "
        f"{figures['slot_without_team_ms']:.0f} ms   bare git push of one commit {baseline:.0f} ms"
    )
    print(
        f"takeover: the delegate's first turn came {figures['takeover_ticks']} tick(s) after the "
        "owner's last (target 2: the lease lasts two intervals)"
    )
    emit(
        {
            "team_slot_to_receipt_pushed_ms": round(figures["slot_to_receipt_pushed_ms"], 1),
            "team_slot_without_team_ms": round(figures["slot_without_team_ms"], 1),
            "team_git_push_one_commit_ms": round(baseline, 1),
            "team_takeover_ticks": figures["takeover_ticks"],
        }
    )


if __name__ == "__main__":
    run(main)
