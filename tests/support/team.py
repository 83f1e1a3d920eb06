"""A team repository on disk for the team tests, and receipts to send to it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from hz_kernel import operations as ops
from hz_kernel.daemon.protocol import Discovery
from hz_kernel.http_client import HttpClient
from hz_kernel.team.receipts import DraftPlacedReceipt, TurnFinishedReceipt
from hz_kernel.tick.report import TickReport
from tests.support.env import hz_env

HEINZEL = "hz-01JD0000000000000000000000"
OTHER = "hz-01JD0000000000000000000001"
T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
_ENV = {
    "GIT_AUTHOR_NAME": "Priya Raman",
    "GIT_AUTHOR_EMAIL": "priya@example.org",
    "GIT_COMMITTER_NAME": "Priya Raman",
    "GIT_COMMITTER_EMAIL": "priya@example.org",
    "GIT_AUTHOR_DATE": "1764000000 +0000",
    "GIT_COMMITTER_DATE": "1764000000 +0000",
    "PATH": "/usr/bin:/bin",
}


def run_git(git_dir: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        input=stdin,
        capture_output=True,
        env=_ENV,
        check=True,
    )
    return done.stdout.decode()


def make_team_repo(root: Path) -> Path:
    """A bare repository whose ``main`` has one commit by a person, as a team's would."""
    bare = root / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    blob = (
        subprocess.run(
            ["git", f"--git-dir={bare}", "hash-object", "-w", "--stdin"],
            input=b"# Team handbook\n",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    tree = (
        subprocess.run(
            ["git", f"--git-dir={bare}", "mktree"],
            input=f"100644 blob {blob}\tREADME.md\n".encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    commit = run_git(bare, "commit-tree", tree, "-m", "handbook").strip()
    run_git(bare, "update-ref", "refs/heads/main", commit)
    return bare


def hz_commit(team: Path, tree: str, parent: str, message: str = "hz: 1 receipt(s)") -> str:
    """A commit as hz writes them (another home's hz, say), by git at the command line."""
    identity = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
                for what, value in (("NAME", "hz"), ("EMAIL", "hz@localhost"))}  # fmt: skip
    done = subprocess.run(
        ["git", f"--git-dir={team}", "commit-tree", tree, "-p", parent, "-m", message],
        env={"PATH": "/usr/bin:/bin", **identity},
        capture_output=True,
        check=True,
    )
    return done.stdout.decode().strip()


def put_on_state(team: Path, files: dict[str, bytes]) -> dict[str, str]:
    """Commit ``files`` on top of ``hz/state`` as another hz would; their blob ids by path."""
    blobs: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": f"{scratch}/index", "PATH": "/usr/bin:/bin"}
        subprocess.run(["git", f"--git-dir={team}", "read-tree", "hz/state"], env=env, check=True)
        for path, data in files.items():
            blobs[path] = run_git(team, "hash-object", "-w", "--stdin", stdin=data).strip()
            entry = f"100644,{blobs[path]},{path}"
            subprocess.run(
                ["git", f"--git-dir={team}", "update-index", "--add", "--cacheinfo", entry],
                env=env,
                check=True,
            )
        tree = subprocess.run(
            ["git", f"--git-dir={team}", "write-tree"], env=env, capture_output=True, check=True
        )
    commit = hz_commit(team, tree.stdout.decode().strip(), "hz/state")
    run_git(team, "update-ref", "refs/heads/hz/state", commit)
    return blobs


def refs(bare: Path) -> dict[str, str]:
    """Every ref of the repository and the object it points to."""
    listed = run_git(bare, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in listed.splitlines())


def finished(turn: str, *, token: int = 1, heinzel: str = HEINZEL) -> TurnFinishedReceipt:
    return TurnFinishedReceipt(
        heinzel=heinzel,
        turn=turn,
        token=token,
        at="2026-11-27T09:00:00.000000Z",
        cause="schedule",
        causes=["schedule"],
        disposition="drafted",
        usd=0.01,
        tokens=1200,
        contract_version=1,
        contract_fp="a" * 64,
        input_fps=["b" * 64],
        draft_hash="c" * 64,
    )


def placed(
    turn: str,
    *,
    token: int = 1,
    asset: str = "doc:reports/weekly.md#status",
    heinzel: str = HEINZEL,
) -> DraftPlacedReceipt:
    return DraftPlacedReceipt(
        heinzel=heinzel,
        turn=turn,
        token=token,
        at="2026-11-27T09:00:01.000000Z",
        key_fp="d" * 64,
        asset=asset,
        hash="c" * 64,
    )


#: The clock of the team-graph homes' ``hz`` runs.
GRAPH_NOW = "2026-11-27T10:00:00Z"
EXEC_SUMMARY = """---
name: exec-summary
description: "Three lines from the team's weekly report."
hz:
  inputs:
    weekly:
      source: heinzel
      method: approved_output
      args: {heinzel: weekly-report, output: weekly-report}
  requires: [heinzels:read, documents:write]
  publishes:
    - capability: documents.place_draft
      asset: "doc:reports/leadership.md#checkout"
  approvers: [owner]
  agent:
    model: local
---
# Executive summary

### Goal

Three lines on what the team shipped this week.
"""


def hz_ok(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hz`` at ``home`` at ``GRAPH_NOW``, which must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "hz_kernel.cli", *args],
        capture_output=True,
        text=True,
        env=hz_env(home, HZ_NOW=GRAPH_NOW),
        timeout=120,
    )
    assert done.returncode == 0, (args, done.stderr)
    return done


def theo_home(root: Path, team: Path, *, reader: bool = True) -> Path:
    """Theo's home on ``team``, its documents (none) beside it; with ``reader``, it has
    exec-summary reading weekly-report, a team heinzel only another home runs."""
    theo = root / "theo"
    theo.mkdir(mode=0o700)
    (root / "docs").mkdir()
    (theo / "hz.toml").write_text(
        f'[documents]\nroot = "{root / "docs"}"\n[team]\nhandle = "theo"\nrepo = "{team}"\n'
    )
    if reader:
        (root / "reader.prose.md").write_text(EXEC_SUMMARY)
        hz_ok(theo, "heinzel", "new", str(root / "reader.prose.md"))
        hz_ok(theo, "approve", "exec-summary")
    return theo


def team_contract(
    repo: Path | str, *, schedule: str = "*/10 * * * *", delegates: str = "[theo]"
) -> str:
    """A team heinzel that writes nothing (the local model answers ``nothing``): one turn a slot."""
    return f"""---
name: team-status
namespace: team
hz:
  schedule: "{schedule}"
  team:
    repo: "{repo}"
    delegates: {delegates}
---
# Team status

### Goal

Keep a short note of the team's week.
"""


def team_home(root: Path, handle: str | None, *, tick_seconds: int = 600) -> Path:
    """A home with ``[team] handle`` (none when None) and the tick interval leases count in."""
    root.mkdir(parents=True, mode=0o700)
    lines = [f"[daemon]\ntick_seconds = {tick_seconds}\n"]
    if handle is not None:
        lines.append(f'[team]\nhandle = "{handle}"\n')
    (root / "hz.toml").write_text("".join(lines))
    return root


class TeamDaemon:
    """A real ``hz`` daemon on a team home whose clock is a file (``HZ_NOW=@file``): the test
    moves the clock and asks for each tick itself (the loop's own interval, ``tick_seconds``, is
    long: it ticks once at start). Leases last two intervals of the simulated clock."""

    def __init__(self, home: Path, tick_seconds: int = 600) -> None:
        self.home = home
        self.tick_seconds = tick_seconds
        self.clock = home / "clock"
        self.pid: int | None = None

    def set_clock(self, moment: datetime) -> None:
        self.clock.write_text(moment.isoformat().replace("+00:00", "Z"))

    def env(self) -> dict[str, str]:
        return hz_env(
            self.home,
            embedded=False,
            HZ_NOW=f"@{self.clock}",
            HZ_TICK_SECONDS=str(self.tick_seconds),
        )

    def hz(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hz_kernel.cli", *args],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=120,
        )

    def start(self) -> None:
        started = self.hz("daemon", "start", "--json")
        assert started.returncode == 0, started.stderr
        self.pid = int(orjson.loads(started.stdout)["pid"])

    async def tick(self) -> TickReport:
        discovery = Discovery.model_validate_json((self.home / "daemon.json").read_bytes())
        async with HttpClient(discovery) as client:
            return await client.call(ops.TICK, ops.Empty())

    def signal(self, sig: int) -> None:
        assert self.pid is not None
        os.kill(self.pid, sig)

    def kill(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


@pytest.fixture
def daemons() -> Iterator[list[TeamDaemon]]:
    """The team daemons a test starts, killed when it ends however it ends."""
    started: list[TeamDaemon] = []
    try:
        yield started
    finally:
        for daemon in started:
            daemon.kill()
