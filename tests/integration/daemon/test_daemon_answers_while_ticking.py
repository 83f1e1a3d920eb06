"""The daemon answers its routes while a tick works through hundreds of heinzels.

A fresh home's first tick looks at every waiting draft: here each one's
document is gone, so each heinzel gets a ``draft.rejected`` line, a
spine opened and written one heinzel after another. That work never waits
on anything; done in one stretch it held the daemon's event loop for
seconds, and every request (``hz daemon start``'s own health check, a
listing) waited for the whole tick or timed out (``HZD040``).

The health answer carries the tick's beat (``ticks``, ``ticking_since``)
and the feed's edge, which each written line moves: answers given while
the first tick is under way at several different edges show the daemon
answered between one heinzel's writes and the next.
"""

from __future__ import annotations

import asyncio
import runpy
import subprocess
import time
from pathlib import Path

import pytest
from daemon_helpers import HZ, Daemons, discovery
from ulid import ULID

from hz_kernel.daemon.protocol import Health
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from tests.support.env import hz_env

HEINZELS = 300
BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """``HEINZELS`` heinzels, each with a draft waiting in a document that is not there."""
    root = tmp_path / "home"
    bench = runpy.run_path(str(BENCH / "_common.py"))  # its spines of whole turns
    for _ in range(HEINZELS):
        heinzel_id = f"hz-{ULID()}"
        bench["write_spine_fast"](
            root / "heinzel" / heinzel_id, bench["turn_events"](heinzel_id, 37)
        )
    indexed = subprocess.run(
        [*HZ, "heinzel", "list", "--json"],
        capture_output=True,
        env=hz_env(root),
        timeout=120,
    )
    assert indexed.returncode == 0, indexed.stderr
    return Home.resolve(root)


async def _answers_until_first_tick(home: Home) -> list[Health]:
    """Health answers, asked one after another from the moment the daemon can be found
    until it has finished its first tick."""
    deadline = time.monotonic() + 120
    while not home.discovery_path.exists():
        assert time.monotonic() < deadline, "the daemon did not write its discovery file"
        await asyncio.sleep(0.01)
    answers: list[Health] = []
    async with HttpClient(discovery(home)) as client:
        while not answers or answers[-1].ticks < 1:
            assert time.monotonic() < deadline, "the first tick did not finish"
            answers.append(await client.health())
    return answers


def test_the_daemon_answers_between_the_first_ticks_heinzels(home: Home, daemons: Daemons) -> None:
    env = hz_env(home.root) | {"HZ_TICK_SECONDS": "3600"}
    launcher = subprocess.Popen(
        [*HZ, "daemon", "start", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        answers = asyncio.run(_answers_until_first_tick(home))
    finally:
        _, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 0, err
    daemons.track(answers[0].pid)
    try:
        during = {a.edge for a in answers if a.ticks == 0 and a.tick and a.tick.ticking_since}
        assert len(during) >= 3, [(a.ticks, a.edge) for a in answers]
        # The tick's guarantees held: each draft was looked at once, by the one writer.
        for spine in (home.root / "heinzel").glob("hz-*/session.jsonl"):
            assert spine.read_text().count('"draft.rejected"') == 1, spine
    finally:
        subprocess.run([*HZ, "daemon", "stop"], env=env, capture_output=True, timeout=60)
