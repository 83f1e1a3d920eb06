"""Issue 12 item 12 (the store's part): a full disk and a read-only home are said as such.

The home lives on a small tmpfs of its own, filled to the last byte or
remounted read-only, and the real ``hz`` runs on it: the error names the
lack of space or of permission and the path, never "the index is not a
database, delete it"; nothing hangs; when space (or write access) returns,
everything works again and nothing written before is lost. Mounting needs
root: elsewhere these tests are skipped, saying why.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.drafted import Drafted, build_drafted, coded_only, copy_drafted

LATER = "2026-12-02T09:00:00Z"


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Drafted:
    return build_drafted(tmp_path_factory.mktemp("drafted"))


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for this test alone."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mount_point)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except FileNotFoundError:
        pytest.skip("no mount command: cannot make a small file system to fill")
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=30)


@pytest.fixture
def world(original: Drafted, disk: Path) -> Drafted:
    world = copy_drafted(original, disk / "world")
    (world.root / "notes" / "tuesday.md").write_text("# Tuesday\n- reviewed checkout\n")
    return world


def _fill(disk: Path) -> Path:
    """Write a file until the file system has no byte left."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out, contextlib.suppress(OSError):
        while out.write(b"\0" * 4096):
            pass
    probe = disk / "probe"
    with pytest.raises(OSError) as full:
        probe.write_bytes(b"x" * 8192)
    assert full.value.errno == errno.ENOSPC
    probe.unlink(missing_ok=True)
    return filler


def _never_blames_the_index(result: subprocess.CompletedProcess[str]) -> None:
    coded_only(result)
    assert "not a database" not in result.stderr and "delete it" not in result.stderr


def test_a_full_disk_says_no_space_and_everything_works_once_space_returns(
    world: Drafted, disk: Path
) -> None:
    """Issue 12 item 12: a full disk gives HZS091 with the path; freeing space loses nothing."""
    before = world.spine.read_bytes()
    filler = _fill(disk)

    woken = world.hz("heinzel", "wake", "dig", now=LATER, timeout=60)
    _never_blames_the_index(woken)
    assert woken.returncode == 1
    assert "HZS091: " in woken.stderr + woken.stdout and str(disk) in woken.stderr + woken.stdout
    listed = world.hz("heinzel", "list", "--json", now=LATER, timeout=60)
    _never_blames_the_index(listed)
    if listed.returncode != 0:
        assert listed.stderr.startswith("HZS091: ")

    filler.unlink()
    assert world.spine.read_bytes().startswith(before), "a durable line was lost"
    again = world.hz("heinzel", "wake", "dig", now="2026-12-02T09:05:00Z")
    assert again.returncode == 0, again.stderr
    verified = world.hz("heinzel", "verify", "dig", now="2026-12-02T09:05:00Z")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    (row,) = json.loads(world.hz("heinzel", "list", "--json", now=LATER).stdout)
    assert row["name"] == "dig" and row["damaged"] is False
    assert row["last_disposition"] == "drafted"


def test_a_read_only_home_says_so_and_works_again_when_writable(world: Drafted, disk: Path) -> None:
    """Issue 12 item 12: a read-only home gives HZS092 with the path, never a damaged index."""

    def remount(mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(disk)], check=True, timeout=30)

    remount("ro")
    try:
        for command in (("heinzel", "wake", "dig"), ("heinzel", "list")):
            result = world.hz(*command, now=LATER, timeout=60)
            _never_blames_the_index(result)
            if result.returncode != 0:
                assert result.stderr.startswith("HZS092: ") and str(disk) in result.stderr
    finally:
        remount("rw")
    again = world.hz("heinzel", "wake", "dig", now=LATER)
    assert again.returncode == 0, again.stderr
    assert world.hz("heinzel", "verify", now=LATER).returncode == 0
    assert os.access(world.spine, os.W_OK)
