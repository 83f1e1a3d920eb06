"""``hz demo``: a realistic throwaway home to try the cockpit on, built through the kernel.

The home (a new temporary folder unless ``--home`` names an empty one) gets
a workspace beside its data: a git repository with a week of history and
merged pull requests, Markdown notes, a weekly report, a changelog and
digests. Four heinzels are made from the shipped templates and approved;
one has already drafted and been approved with an edit, so it has learned
something. The cockpit then opens on it with a fast tick, while a
background job keeps committing to the repository, so turns run, drafts
land and the repository moves while you watch.

Only the public ``Kernel`` commands are used; nothing here writes a spine.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import count
from pathlib import Path

from hz_kernel.clock import now_utc
from hz_kernel.contracts import render_template
from hz_kernel.errors import HzError, UsageError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.fsutil import atomic_write, ensure_private_dir

#: The demo's pace: a tick every few seconds, a commit every ``COMMIT_EVERY_S``, and a local
#: model slow enough that its output can be watched streaming.
TICK_SECONDS = "5"
COMMIT_EVERY_S = 20.0
MODEL_DELAY_MS = "60"
#: Inputs are looked at again after this long (the shortest a contract allows) instead of the
#: templates' hours, so the repository's new commits reach the heinzels within the demo.
RECHECK = "1m"

AUTHOR = {"GIT_AUTHOR_NAME": "Priya Raman", "GIT_AUTHOR_EMAIL": "priya@acme.example"}
COMMITTER = {"GIT_COMMITTER_NAME": "Priya Raman", "GIT_COMMITTER_EMAIL": "priya@acme.example"}
GIT_TIMEOUT_S = 20.0

#: A week of work, oldest first: (day from a week ago, hour, what, branch, subject or PR number).
#: A ``commit`` on a branch starts the branch from main; a ``merge`` merges it as a pull request.
HISTORY: tuple[tuple[int, int, str, str | None, str | int], ...] = (
    (0, 9, "commit", None, "Set up the checkout service"),
    (0, 11, "commit", "one-click-refunds", "Add one-click refunds to the order page"),
    (1, 10, "commit", "one-click-refunds", "Refunds: show the amount before confirming"),
    (1, 14, "commit", None, "Fix the currency rounding in invoices"),
    (2, 9, "commit", "payment-retries", "Retry failed card payments behind a flag"),
    (2, 16, "merge", "one-click-refunds", 41),
    (3, 10, "commit", None, "chore: bump dependencies"),
    (3, 15, "commit", "search-suggestions", "Suggest products while typing in search"),
    (3, 17, "merge", "payment-retries", 42),
    (4, 11, "commit", None, "Fix the login redirect after a password reset"),
    (5, 10, "commit", "dark-mode", "Add a dark theme to the storefront"),
    (5, 16, "merge", "search-suggestions", 43),
    (6, 9, "commit", None, "Document the release process"),
    (6, 15, "merge", "dark-mode", 44),
)
#: What the background job commits while the demo runs, in turn (every third as a merged PR).
LATER = (
    "Show delivery dates on the cart page",
    "Fix a crash when the basket is empty",
    "Gift cards at checkout",
    "Speed up the product list query",
    "Fix the VAT line on receipts",
    "Saved addresses for returning customers",
)

NOTES = {
    "monday.md": "# Monday\n- planned the refunds rollout with support\n- lunch with the team\n",
    "tuesday.md": "# Tuesday\n- payment retries look good in staging\n- Ana joins on-call\n",
    "wednesday.md": "# Wednesday\n- search suggestions need a relevance pass\n",
    "thursday.md": "# Thursday\n- dark mode contrast checked with design\n",
}
INCIDENTS = {
    "2026-refund-timeouts.md": "# Refund timeouts\n- refunds over 500 EUR timed out for 20 min\n"
    "- fixed by raising the gateway timeout\n",
    "2026-search-outage.md": "# Search outage\n- search returned nothing for 5 min after a deploy\n"
    "- rolled back; a config key was missing\n",
}
DOCUMENTS = {
    "reports/weekly.md": "# Weekly report\n\n## This week\n\nLast week's section is below.\n",
    "CHANGELOG.md": "# Changelog\n\n## Unreleased\n\n## 1.4.0\n\n- Wish lists\n",
    "digest.md": "# Notes digest\n",
    "oncall/incidents.md": "# On-call\n",
}
#: The first heinzel's draft gets this edit before it is approved, so it learns from it.
EDITED_OUT = "lunch with the team"


@dataclass(frozen=True)
class DemoHeinzel:
    """One heinzel of the demo: the template it comes from and the parameters it gets."""

    template: str
    params: dict[str, str]


HEINZELS = (
    DemoHeinzel("digest", {"name": "notes-digest", "notes": "notes", "document": "digest.md"}),
    DemoHeinzel(
        "weekly-report",
        {
            "repo": "acme-shop",
            "notes": "notes",
            "document": "reports/weekly.md",
            "schedule": "",
        },
    ),
    DemoHeinzel("changelog", {"repo": "acme-shop", "document": "CHANGELOG.md"}),
    DemoHeinzel(
        "digest",
        {
            "name": "incident-digest",
            "notes": "incidents",
            "document": "oncall/incidents.md",
            "section": "incidents",
            "schedule": "",
        },
    ),
)


@dataclass(frozen=True)
class DemoWorld:
    """Where the demo lives: the hz home, its workspace (the documents root) and the repo."""

    home: Home
    workspace: Path
    repo: Path

    def git(self, *args: str, when: datetime | None = None) -> str:
        return _git(self.repo, *args, when=when)


def demo_root(explicit: str | None) -> Path:
    """The folder the demo home is built in: ``explicit`` (new or empty), else a temp dir."""
    if explicit is None:
        return Path(tempfile.mkdtemp(prefix="hz-demo-"))
    root = Path(explicit).expanduser()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(
            "HZU070", "hz demo builds a fresh home; give a new or empty folder", str(root)
        )
    ensure_private_dir(root)
    return root.resolve()


def demo_environment() -> None:
    """The demo's pace, unless the user set these knobs already (``docs/cockpit.md``).

    The model library's first-run banner is turned off too: the demo's first
    turn runs before the cockpit opens, where the banner would bury the
    demo's own lines.
    """
    os.environ.setdefault("HZ_TICK_SECONDS", TICK_SECONDS)
    os.environ.setdefault("HZ_MODEL_DELAY_MS", MODEL_DELAY_MS)
    os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")


async def build(root: Path, *, say: Callable[[str], None] = lambda _: None) -> DemoWorld:
    """Write the workspace, create and approve the heinzels, and teach the first one a lesson."""
    if shutil.which("git") is None:
        raise HzError("HZU071", "hz demo needs git on the PATH", "git")
    workspace = root / "workspace"
    repo = workspace / "acme-shop"
    say(f"building a demo home in {root}")
    _write_files(workspace, repo)
    atomic_write(root / "hz.toml", f'[documents]\nroot = "{workspace}"\n'.encode())
    world = DemoWorld(Home.resolve(root, create=True), workspace, repo)
    say("a git repository with a week of history and merged pull requests")
    _write_history(world)
    kernel = await Kernel.open(world.home)
    try:
        names = []
        for heinzel in HEINZELS:
            text = render_template(heinzel.template, heinzel.params)
            made = await kernel.new(text=re.sub(r"recheck: \S+", f"recheck: {RECHECK}", text))
            await kernel.approve(ref=made.id)
            names.append(made.name)
        say(f"heinzels created and approved: {', '.join(names)}")
        say(f"{names[0]} drafts its first digest and learns from an edit…")
        await _first_lesson(kernel, world, names[0])
    finally:
        await kernel.close()
    return world


async def _first_lesson(kernel: Kernel, world: DemoWorld, name: str) -> None:
    """Let the first heinzel draft, edit its draft as a user would, and approve it."""
    await kernel.wake(ref=name)
    pending = [d for d in (await kernel.drafts()).items if d.heinzel_name == name]
    if not pending:
        return
    document = world.workspace / HEINZELS[0].params["document"]
    text = document.read_text(encoding="utf-8")
    kept = "\n".join(line for line in text.split("\n") if EDITED_OUT not in line)
    atomic_write(document, kept.encode())
    await kernel.approve(ref=pending[0].key)


def _write_files(workspace: Path, repo: Path) -> None:
    for folder, files in (("notes", NOTES), ("incidents", INCIDENTS), ("", DOCUMENTS)):
        for name, text in files.items():
            path = workspace / folder / name
            ensure_private_dir(path.parent)
            atomic_write(path, text.encode())
    ensure_private_dir(repo)


def _write_history(world: DemoWorld) -> None:
    start = now_utc().replace(minute=0, second=0, microsecond=0) - timedelta(days=7)
    world.git("init", "-q", "-b", "main")
    started: set[str] = set()
    for day, hour, what, branch, detail in HISTORY:
        when = start.replace(hour=hour) + timedelta(days=day)
        if what == "merge" and branch is not None:
            _merge(world, f"feature/{branch}", int(detail), when)
            continue
        if branch is not None:
            new = branch not in started
            started.add(branch)
            world.git("checkout", "-q", *(["-b"] if new else []), f"feature/{branch}")
        _commit(world, str(detail), when)
        world.git("checkout", "-q", "main")


def _commit(world: DemoWorld, subject: str, when: datetime, *, serial: int | None = None) -> None:
    """One commit that adds a file named after the subject (and ``serial``, to repeat one)."""
    slug = re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")
    if serial is not None:
        slug = f"{slug}-{serial}"
    path = world.repo / "changes" / f"{slug}.md"
    ensure_private_dir(path.parent)
    atomic_write(path, f"# {subject}\n".encode())
    world.git("add", "-A")
    world.git("commit", "-q", "-m", subject, when=when)


def _merge(world: DemoWorld, branch: str, number: int, when: datetime) -> None:
    title = world.git("log", "-1", "--format=%s", branch).strip()
    message = f"Merge pull request #{number} from acme/{branch.removeprefix('feature/')}"
    world.git("merge", "-q", "--no-ff", branch, "-m", message, "-m", title, when=when)


def _git_env(when: datetime | None) -> dict[str, str]:
    env = {
        **os.environ,
        **AUTHOR,
        **COMMITTER,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    if when is not None:
        stamp = when.isoformat()
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    return env


def _git(repo: Path, *args: str, when: datetime | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            env=_git_env(when),
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HzError("HZU072", f"git {args[0]} failed: {exc}", str(repo)) from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise HzError("HZU072", f"git {args[0]} failed: {reason}", str(repo))
    return done.stdout


async def keep_committing(
    world: DemoWorld, stop: asyncio.Event, *, every: float = COMMIT_EVERY_S
) -> None:
    """Commit to the demo repository every ``every`` seconds until ``stop`` is set.

    Every third change arrives as a merged pull request. A git failure ends
    the job quietly: the demo goes on with a repository that stands still.
    """
    numbers = count(45)
    for step in count():
        try:
            await asyncio.wait_for(stop.wait(), timeout=every)
            return
        except TimeoutError:
            pass
        pull_request = next(numbers) if step % 3 == 2 else None
        try:
            await asyncio.to_thread(_change, world, step, pull_request)
        except HzError:
            return


def _change(world: DemoWorld, step: int, pull_request: int | None) -> None:
    """The ``step``-th change: a commit on main, or a branch merged as ``pull_request``."""
    now = now_utc().replace(microsecond=0)
    subject = LATER[step % len(LATER)]
    if pull_request is None:
        _commit(world, subject, now, serial=step)
        return
    branch = f"feature/pr-{pull_request}"
    world.git("checkout", "-q", "-b", branch, "main")
    _commit(world, subject, now, serial=step)
    world.git("checkout", "-q", "main")
    _merge(world, branch, pull_request, now)


def summary(world: DemoWorld) -> Sequence[str]:
    """What the demo prints before the cockpit opens."""
    return (
        f"home:      {world.home.root}",
        f"workspace: {world.workspace} (the documents, notes and the acme-shop repository)",
        "the cockpit opens now: F4 reviews drafts, Enter opens a heinzel, Ctrl+Q or q quits",
    )
