"""Issue 16: a rebuild of the index under real processes: Ctrl-C, and a listing beside it.

A real ``hz`` rebuilds a home big enough to be folded by worker processes;
a real SIGINT sent to its whole process group (as a terminal's Ctrl-C is)
must stop it at once with one coded line, end its workers, and leave the
index as it was (or none, which the next open rebuilds). A listing run by
a second process while another rebuilds must list the whole home or fail
with a coded line: never part of it.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import orjson
import pytest
from ulid import ULID

from hz_kernel.store.rebuild import POOL_FROM
from tests.support.env import hz_env
from tests.support.homes import HZ, start_in_own_group

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="workers fork on Linux only")

HEINZELS = POOL_FROM * 3
EVENTS = 240
BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_common() -> ModuleType:
    """The benchmarks' helpers: their spines of whole turns are what this home is made of."""
    spec = importlib.util.spec_from_file_location("bench_common", BENCH / "_common.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def big_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home of ``HEINZELS`` spines and its index, built once; each test copies it."""
    home = tmp_path_factory.mktemp("big") / "home"
    bench = _bench_common()
    for _ in range(HEINZELS):
        heinzel_id = f"hz-{ULID()}"
        bench.write_spine_fast(home / "heinzel" / heinzel_id, bench.turn_events(heinzel_id, EVENTS))
    built = _hz(home, "heinzel", "list", "--json")
    assert built.returncode == 0, built.stderr
    return home


@pytest.fixture
def home(big_home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    subprocess.run(["cp", "-a", str(big_home), str(copy)], check=True)
    return copy


def _hz(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HZ, *args], capture_output=True, text=True, env=hz_env(home), timeout=120
    )


def _start(home: Path, *args: str) -> subprocess.Popen[str]:
    return start_in_own_group(home, *args, env=hz_env(home))


def _wait_for(proc: subprocess.Popen[str], ready: str) -> bool:
    """Wait until ``proc`` has worker processes (``workers``) or holds a spine's lock (``spine``:
    the rebuild on open holds each one it folds until its rows are written); False if it ended
    first."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    fds = Path(f"/proc/{proc.pid}/fd")
    while proc.poll() is None:
        try:
            if ready == "workers" and children.read_text().split():
                return True
            if ready == "spine" and any(os.readlink(fd).endswith("/lock") for fd in fds.iterdir()):
                return True
        except OSError:
            pass
        time.sleep(0.005)
    return False


def _group_gone(pgid: int) -> bool:
    """Whether every process of the group has ended (zombies reaped by their parent)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = [
            pid for pid in os.listdir("/proc") if pid.isdigit() and _pgid_alive(int(pid), pgid)
        ]
        if not alive:
            return True
        time.sleep(0.05)
    return False


def _pgid_alive(pid: int, pgid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return int(fields[2]) == pgid and fields[0] != "Z"


def _listed(result: subprocess.CompletedProcess[str]) -> int:
    assert result.returncode == 0, result.stderr
    return len(orjson.loads(result.stdout))


def _interrupt(home: Path, ready: str, *args: str) -> tuple[int, str, str] | None:
    """Start ``hz args``, send SIGINT to its group once it is ``ready``; its exit code and
    output, or None when it ended before it was ready (a machine fast enough)."""
    proc = _start(home, *args)
    if not _wait_for(proc, ready):
        return None
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=60)
    assert _group_gone(proc.pid)
    out = (home.parent / "out.txt").read_text()
    return proc.returncode, out, (home.parent / "err.txt").read_text()


def _forget_index(home: Path) -> None:
    for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (home / "heinzel" / name).unlink(missing_ok=True)


def test_ctrl_c_stops_a_reindex_with_one_coded_line_and_keeps_the_index(home: Path) -> None:
    """Ctrl-C while workers fold: exit 130, one HZS127 line, no worker left, and the index
    still lists every heinzel (its transaction was rolled back, not half committed)."""
    stopped = _interrupt(home, "workers", "heinzel", "reindex")
    assert stopped is not None
    code, out, err = stopped
    assert code == 130
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("HZS127: ")
    assert _listed(_hz(home, "heinzel", "list", "--json")) == HEINZELS


def test_ctrl_c_stops_the_rebuild_on_open_and_the_next_open_rebuilds(home: Path) -> None:
    """The index deleted: the command that opens the home rebuilds it; Ctrl-C during that
    rebuild stops it the same way, and the next command rebuilds the whole home."""
    for _ in range(5):
        _forget_index(home)
        stopped = _interrupt(home, "spine", "heinzel", "list", "--json")
        if stopped is not None:
            break
    assert stopped is not None
    code, out, err = stopped
    assert code == 130
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("HZS127: ")
    assert _listed(_hz(home, "heinzel", "list", "--json")) == HEINZELS


@pytest.mark.parametrize("index", ["kept", "deleted"])
def test_a_listing_beside_a_rebuild_lists_the_whole_home_or_fails_coded(
    home: Path, index: str
) -> None:
    """A second process lists while ``hz heinzel reindex`` runs (over the index, or from none):
    each listing has every heinzel, or is one coded line; never part of the home."""
    if index == "deleted":
        _forget_index(home)
    rebuilding = _start(home, "heinzel", "reindex")
    outcomes: list[int | str] = []
    try:
        while rebuilding.poll() is None or not outcomes:
            listing = _hz(home, "heinzel", "list", "--json")
            if listing.returncode == 0:
                outcomes.append(len(orjson.loads(listing.stdout)))
            else:
                lines = listing.stderr.splitlines()
                assert len(lines) == 1 and lines[0][:3] == "HZS", listing.stderr
                outcomes.append(lines[0].split(":")[0])
    finally:
        rebuilding.wait(timeout=120)
    assert rebuilding.returncode == 0, (home.parent / "err.txt").read_text()
    assert all(n == HEINZELS for n in outcomes if isinstance(n, int)), outcomes
    assert _listed(_hz(home, "heinzel", "list", "--json")) == HEINZELS
