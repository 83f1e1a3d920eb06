"""Attacks on issue 14 answered in the kernel: hostile files and damaged records, through ``hz``.

Point 3: a FIFO where ``hz heinzel import`` reads a contract never hangs it.
Point 4: a damaged turn-body record is passed on as such by ``turn.transcript``.
Point 5: a non-regular inbox entry is skipped (and said) by ``heinzel.conversation``.
Point 6: a refusal caused by the user's document is a 4xx on the daemon.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.env import hz_env
from tests.support.tmux import HZ
from tests.tui import worlds


def hz(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = hz_env(home, HZ_NOW="2026-12-01T09:00:00+00:00")
    return subprocess.run(
        [str(HZ), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_attack3_a_fifo_among_the_contracts_to_import_is_refused_and_nothing_hangs(
    tmp_path: Path,
) -> None:
    world = worlds.make_world(tmp_path)
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "good.prose.md").write_text(worlds.digest("good-digest"))
    os.mkfifo(folder / "jammed.prose.md")
    done = hz(world.home.root, "heinzel", "import", str(folder), timeout=30)
    assert "Traceback" not in done.stderr
    jammed = f"HZS004: {folder / 'jammed.prose.md'}: cannot read (it is a FIFO, not a regular file)"
    assert jammed in done.stdout + done.stderr
    assert "created 1" in done.stdout
