"""Issue 12 item 2: every benchmark in ``bench/`` runs — a smoke run at tiny sizes, no timing.

A benchmark that cannot run is a broken feature (``bench/turn.py`` once died
with ``StopIteration`` and then never exited). Each script found in
``bench/`` runs as a real process with ``--tiny``; it must exit 0 within
the timeout and end with one JSON object of named figures. What the figures
say is not asserted: these machines are noisy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.env import hz_env

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))
TIMEOUT_S = 100


def _env(tmp_path: Path) -> dict[str, str]:
    """The caller's environment without hz's test knobs, scratch files under ``tmp_path``."""
    return hz_env(HZ_BENCH_DIR=str(tmp_path), TMPDIR=str(tmp_path))


def test_bench_holds_the_known_scripts() -> None:
    """The smoke run covers every script, so none can be missed by a rename."""
    known = {"store", "cockpit", "feed", "tick", "turn", "agent_turn", "cli", "team"}
    assert {p.stem for p in SCRIPTS} >= known


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_every_bench_script_runs_at_a_tiny_size_and_ends_with_its_figures(
    script: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--tiny"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=tmp_path,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    last = done.stdout.strip().splitlines()[-1]
    figures = json.loads(last)
    assert isinstance(figures, dict) and figures, last
    for name, value in figures.items():
        assert isinstance(name, str) and name
        assert isinstance(value, int | float), (name, value)


def test_a_failing_benchmark_exits_even_with_a_thread_left_open(tmp_path: Path) -> None:
    """A run that fails must end the process: a thread a failed run leaves open (an index
    connection never closed) once kept ``bench/turn.py`` alive after its error."""
    script = (
        "import sys, threading\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"
        "from _common import run\n"
        "threading.Thread(target=threading.Event().wait).start()\n"
        "def fail():\n"
        "    raise RuntimeError('the turn did not finish')\n"
        "run(fail)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=30,
    )
    assert done.returncode == 1
    assert "RuntimeError: the turn did not finish" in done.stderr
