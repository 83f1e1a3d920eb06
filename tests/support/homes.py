"""Real homes for tests: a documents root, a notes folder, a git repository, the ``hz`` binary."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson

from hz_kernel.contracts import render_template
from tests.support.env import hz_env

HZ = [sys.executable, "-m", "hz_kernel.cli"]


@dataclass
class World:
    """A throwaway home with a documents root and real sources beside it."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    def env(self, **extra: str) -> dict[str, str]:
        return hz_env(self.home, **extra)

    def hz(self, *args: str, check: bool = True, **extra: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*HZ, *args], capture_output=True, text=True, env=self.env(**extra), timeout=120
        )
        if check and result.returncode != 0:
            raise AssertionError(f"hz {' '.join(args)} -> {result.returncode}\n{result.stderr}")
        return result

    def spine(self, heinzel_id: str) -> list[dict[str, object]]:
        path = self.home / "heinzel" / heinzel_id / "session.jsonl"
        return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]

    def kinds(self, heinzel_id: str) -> list[str]:
        return [str(e["kind"]) for e in self.spine(heinzel_id)]


def start_in_own_group(home: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """``hz args`` in a process group of its own, so a signal reaches all of it as Ctrl-C
    does. Its output goes to ``out.txt`` and ``err.txt`` beside the home: a pipe nobody reads
    yet would stop it once full."""
    with (home.parent / "out.txt").open("w") as out, (home.parent / "err.txt").open("w") as err:
        return subprocess.Popen(
            [*HZ, *args], stdout=out, stderr=err, text=True, env=env, start_new_session=True
        )


def make_world(root: Path) -> World:
    world = World(root)
    world.home.mkdir(parents=True)
    world.notes.mkdir()
    world.reports.mkdir()
    (world.home / "hz.toml").write_text(f'[documents]\nroot = "{root}"\n')
    (world.notes / "monday.md").write_text("# Monday\n- fixed the login bug\n- shipped search\n")
    (world.notes / "tuesday.md").write_text("# Tuesday\n- reviewed the checkout flow\n")
    return world


def digest_contract(name: str = "notes-digest", model: str = "local") -> str:
    return render_template(
        "digest", {"name": name, "notes": "notes", "document": "reports/digest.md", "model": model}
    )


def git(repo: Path, *args: str, when: str = "2026-10-27T10:00:00+00:00") -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Priya",
        "GIT_AUTHOR_EMAIL": "priya@acme.test",
        "GIT_COMMITTER_NAME": "Priya",
        "GIT_COMMITTER_EMAIL": "priya@acme.test",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
    }
    result = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return result.stdout


def checkout_repo(world: World) -> Path:
    """A git repository with two merged pull requests in the week of 2026-10-26."""
    repo = world.root / "checkout"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("print('hi')\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial", when="2026-10-20T09:00:00+00:00")
    for n, title in ((41, "Faster checkout"), (42, "Retry failed payments")):
        git(repo, "checkout", "-q", "-b", f"feature-{n}")
        (repo / f"f{n}.py").write_text(f"# {title}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", title, when="2026-10-27T10:00:00+00:00")
        git(repo, "checkout", "-q", "main")
        merge = f"Merge pull request #{n} from acme/feature-{n}"
        git(repo, "merge", "-q", "--no-ff", f"feature-{n}", "-m", merge, "-m", title,
            when="2026-10-28T11:00:00+00:00")  # fmt: skip
    return repo
