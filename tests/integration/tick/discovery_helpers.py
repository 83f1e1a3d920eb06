"""Discovery tests' shared setup: a contract with hints, spine events, a team repository."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hz_kernel.api import ContractProposal
from hz_kernel.kernel import Kernel
from tests.support.homes import World


def discovering(name: str, hints: list[str], *, namespace: str = "me", extra: str = "") -> str:
    """A contract that reads ``notes/*.md``, drafts into ``<name>.md`` and discovers ``hints``."""
    return (
        f"---\nname: {name}\nnamespace: {namespace}\nhz:\n"
        "  inputs:\n"
        "    notes:\n"
        "      source: files\n"
        "      method: glob\n"
        '      args: {pattern: "notes/*.md"}\n'
        "  requires: [files:read, documents:write]\n"
        f"  publishes:\n    - {{capability: documents.place_draft, asset: 'doc:{name}.md'}}\n"
        f"  discover: {json.dumps(hints)}\n{extra}"
        f"---\n### Goal\nKeep the {name} true.\n"
    )


def events_of(world: World, heinzel: str, kind: str) -> list[dict[str, object]]:
    return [e for e in world.spine(heinzel) if e["kind"] == kind]


def _git(*args: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@t.test",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@t.test"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def team_repository(world: World) -> tuple[Path, Path]:
    """A bare team repository with ``docs/incidents/checkout.md`` on main, named in hz.toml,
    and a clone to push changes from."""
    bare = world.root / "team.git"
    _git("init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    work = world.root / "team-work"
    _git("clone", "--quiet", str(bare), str(work))
    (work / "docs" / "incidents").mkdir(parents=True)
    (work / "docs" / "incidents" / "checkout.md").write_text("- checkout\n")
    (work / "README.md").write_text("team\n")
    push(work, "docs")
    settings = world.home / "hz.toml"
    settings.write_text(settings.read_text() + f'\n[team]\nhandle = "priya"\nrepo = "{bare}"\n')
    return bare, work


def push(work: Path, message: str) -> None:
    _git("add", "-A", cwd=work)
    _git("commit", "--quiet", "-m", message, cwd=work)
    _git("push", "--quiet", "origin", "HEAD:main", cwd=work)


def team_discovering(hint: str) -> str:
    return discovering("weekly", [hint], namespace="team").replace(
        "[files:read, documents:write]", "[files:read, git:read, documents:write]"
    )


async def declined_first_proposal(kernel: Kernel, name: str) -> ContractProposal:
    """Tick until the heinzel proposes its first discovered source, decline it, return it."""
    await kernel.tick_once()
    await kernel.tick_once()
    pending = (await kernel.contract(name)).pending
    assert pending is not None
    await kernel.reject(ref=f"{name}@amendment:{pending.proposal}")
    return pending
