"""A home where one heinzel (``dig``) has drafted once, made by the real ``hz``, copied per test.

Building it costs three ``hz`` runs; the store-fault tests each need a fresh
copy, so the first build is kept and copied (the documents root in
``hz.toml`` is rewritten for the copy). Every ``hz`` run has a timeout, so a
command that hangs fails its test instead of hanging CI.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson

from tests.support.env import hz_env

HZ = [sys.executable, "-m", "hz_kernel.cli"]
#: The clock every test run pins (``HZ_NOW``), so nothing depends on today's date.
DRAFTED_AT = "2026-12-01T09:00:00Z"
#: A coded line: what hz prints on stderr for every error.
CODED = re.compile(r"^HZ[A-Z][0-9]{3}: ")
CODED_ANYWHERE = re.compile(r"HZ[A-Z][0-9]{3}: ")


@dataclass
class Drafted:
    """A copy of the drafted world: ``root`` holds ``home``, ``notes`` and ``reports``."""

    root: Path
    heinzel_id: str

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def heinzel_dir(self) -> Path:
        return self.home / "heinzel" / self.heinzel_id

    @property
    def spine(self) -> Path:
        return self.heinzel_dir / "session.jsonl"

    @property
    def document(self) -> Path:
        return self.root / "reports" / "digest.md"

    def hz(
        self, *args: str, now: str = DRAFTED_AT, timeout: float = 60, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run the real ``hz``; a run that outlives ``timeout`` fails the test (it hung)."""
        try:
            return subprocess.run(
                [*HZ, *args],
                capture_output=True,
                text=True,
                env={**self.hz_env(now), **env},
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise AssertionError(f"hz {' '.join(args)} hung for {timeout}s") from None

    def hz_env(self, now: str = DRAFTED_AT) -> dict[str, str]:
        """The environment of an ``hz`` run on this home, its clock pinned to ``now``."""
        return hz_env(self.home, HZ_NOW=now)

    def events(self) -> list[dict[str, object]]:
        return [orjson.loads(line) for line in self.spine.read_bytes().splitlines()]

    def draft_turn(self) -> str:
        placed = [e for e in self.events() if e["kind"] == "draft.placed"]
        return str(placed[-1]["turn"])

    def draft_key(self) -> str:
        placed = [e for e in self.events() if e["kind"] == "draft.placed"]
        return str(placed[-1]["key"])


def build_drafted(root: Path) -> Drafted:
    """``hz heinzel new`` (the digest template), ``hz approve``, ``hz heinzel wake``: one draft."""
    for folder in ("home", "notes", "reports"):
        (root / folder).mkdir(parents=True)
    (root / "home" / "hz.toml").write_text(f'[documents]\nroot = "{root}"\n')
    (root / "notes" / "monday.md").write_text("# Monday\n- fixed the login bug\n- shipped search\n")
    world = Drafted(root, "")
    made = world.hz(
        "heinzel", "new", "--template", "digest", "--param", "name=dig",
        "--param", "notes=notes", "--param", "document=reports/digest.md", "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    world.heinzel_id = orjson.loads(made.stdout)["id"]
    for args in (("approve", "dig"), ("heinzel", "wake", "dig")):
        result = world.hz(*args)
        assert result.returncode == 0, result.stderr
    return world


def copy_drafted(original: Drafted, root: Path) -> Drafted:
    """A private copy of ``original`` under ``root``, its documents root pointing at the copy."""
    shutil.copytree(original.root, root, symlinks=True)
    (root / "home" / "hz.toml").write_text(f'[documents]\nroot = "{root}"\n')
    return Drafted(root, original.heinzel_id)


def coded_only(result: subprocess.CompletedProcess[str]) -> None:
    """No traceback, no internal error: every line on stderr is a coded one."""
    assert "Traceback" not in result.stderr, result.stderr
    assert "HZX001" not in result.stderr, result.stderr
    for line in result.stderr.splitlines():
        assert CODED.match(line), result.stderr
    if result.returncode != 0:
        said = result.stderr + result.stdout
        assert CODED_ANYWHERE.search(said), f"an error exit must say why: {said!r}"
