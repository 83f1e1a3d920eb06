"""A team repository on disk for the team tests, and receipts to send to it."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from hz_kernel.team.receipts import DraftPlacedReceipt, TurnFinishedReceipt

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


def run_git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, env=_ENV, check=True
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
    turn: str, *, token: int = 1, asset: str = "doc:reports/weekly.md#status"
) -> DraftPlacedReceipt:
    return DraftPlacedReceipt(
        heinzel=HEINZEL,
        turn=turn,
        token=token,
        at="2026-11-27T09:00:01.000000Z",
        key_fp="d" * 64,
        asset=asset,
        hash="c" * 64,
    )


def team_contract(repo: Path, *, schedule: str = "*/10 * * * *", delegates: str = "[theo]") -> str:
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
