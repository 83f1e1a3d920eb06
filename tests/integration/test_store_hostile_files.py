"""Issue 12 item 11, hostile files: a FIFO, a socket, a device or a link in each place hz reads.

Every place hz reads from a home — a spine, the index, an inbox entry, a
turn body, a contract file, the settings, a spine's lock — is replaced in
turn by a FIFO, a socket, a character device and a symbolic link, and the
commands that read it are run through the real ``hz`` with a timeout. The
promises: nothing hangs (today a FIFO hangs ``list``, ``verify``, ``tick``
and ``wake``), nothing ends in a traceback or an internal error, and a
special file is refused with its coded error. Then the damaged index, the
index that is a directory, and the interrupted turn whose body is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.drafted import Drafted, build_drafted, coded_only, copy_drafted

KINDS = ("fifo", "socket", "device", "symlink")


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Drafted:
    return build_drafted(tmp_path_factory.mktemp("drafted"))


@pytest.fixture
def world(original: Drafted, tmp_path: Path) -> Drafted:
    return copy_drafted(original, tmp_path / "world")


def _replace(path: Path, kind: str) -> None:
    """Put a special file of ``kind`` where ``path`` is (a link points at a copy of the file)."""
    if kind == "symlink":
        real = path.with_name(path.name + ".real")
        if path.exists():
            path.rename(real)
        else:
            real.write_text("{}")
        path.symlink_to(real)
        return
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with contextlib.chdir(path.parent), socket.socket(socket.AF_UNIX) as server:
            server.bind(path.name)  # relative: a test's full path exceeds AF_UNIX's 108 bytes
    else:
        try:
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # like /dev/zero: endless
        except PermissionError:
            pytest.skip("creating a device node is not permitted on this machine")


Place = Callable[[Drafted], Path]
#: Each place hz reads, the commands that read it, and the code that refuses a special file there.
PLACES: dict[str, tuple[Place, list[tuple[str, ...]], str]] = {
    "spine": (lambda w: w.spine, [("heinzel", "list"), ("heinzel", "wake", "dig")], "HZS011"),
    "index": (lambda w: w.home / "heinzel" / "index.sqlite", [("heinzel", "list")], "HZS090"),
    "inbox entry": (
        lambda w: w.heinzel_dir / "inbox" / "hostile.json",
        [("heinzel", "wake", "dig"), ("heinzel", "show", "dig")],  # skipped; show says so
        "HZS090",
    ),
    "body": (
        lambda w: w.heinzel_dir / "turns" / f"{w.draft_turn()}.jsonl",
        [("approve", "{key}"), ("heinzel", "show", "dig")],
        "HZS090",
    ),
    "contract file": (
        lambda w: w.heinzel_dir / "contract" / "v1.prose.md",
        [("heinzel", "wake", "dig")],
        "HZC081",
    ),
    "settings": (lambda w: w.home / "hz.toml", [("heinzel", "list")], "HZS060"),
    "lock": (lambda w: w.heinzel_dir / "lock", [("heinzel", "wake", "dig")], "HZS090"),
}
#: Links hz follows on purpose (a dotfile manager links hz.toml): they must simply work.
FOLLOWED = {"settings"}
#: Links hz refuses outright; elsewhere a link is not followed and reads as a missing file.
REFUSED_LINKS = {"spine", "index", "lock"}
CASES = [(place, kind) for place in PLACES for kind in KINDS if kind != "device"] + [
    ("spine", "device")
]


@pytest.mark.parametrize(("place", "kind"), CASES)
def test_a_special_file_where_hz_reads_is_refused_and_nothing_hangs(
    world: Drafted, place: str, kind: str
) -> None:
    """Issue 12 item 11: a FIFO, socket, device or link in each place hz reads; never a hang."""
    where, commands, code = PLACES[place]
    key = world.draft_key()
    _replace(where(world), kind)
    said: list[str] = []
    for command in commands:
        result = world.hz(*(key if arg == "{key}" else arg for arg in command), timeout=30)
        coded_only(result)
        said.extend([*result.stderr.splitlines(), *result.stdout.splitlines()])
        if kind == "symlink" and place in FOLLOWED:
            assert result.returncode == 0, result.stderr
    if kind != "symlink" or place in REFUSED_LINKS:
        assert any(f"{code}: " in line for line in said), said


def test_a_settings_link_to_nothing_is_refused_and_no_draft_is_rejected(world: Drafted) -> None:
    """A dangling ``hz.toml`` link (a dotfile repository not there yet) is HZS060, never the
    defaults: with another documents root a tick read every waiting draft's document as gone
    and recorded each draft as rejected."""
    settings = world.home / "hz.toml"
    settings.unlink()
    settings.symlink_to(world.root / "dotfiles" / "hz.toml")
    for command in (("heinzel", "list"), ("tick", "--once")):
        result = world.hz(*command, timeout=30)
        coded_only(result)
        assert result.returncode == 1
        assert result.stderr.startswith("HZS060: ") and str(settings) in result.stderr
    assert "draft.rejected" not in [e["kind"] for e in world.events()]


def test_an_approval_is_recorded_when_the_drafts_body_is_a_fifo(world: Drafted) -> None:
    """The placed draft's body replaced by a FIFO failed the approval turn before it recorded
    the approval: its key was spent, so the draft stayed pending for ever, even once the
    FIFO was gone. The approval is recorded without the text as placed."""
    key = world.draft_key()
    body = world.heinzel_dir / "turns" / f"{world.draft_turn()}.jsonl"
    body.unlink()
    os.mkfifo(body)
    approved = world.hz("approve", key, timeout=30)
    coded_only(approved)
    assert approved.returncode == 0, approved.stderr
    observed = [e for e in world.events() if e["kind"] == "approval.observed"]
    assert [e["data"]["key"] for e in observed] == [key]  # type: ignore[index]
    assert json.loads(world.hz("drafts", "--json").stdout)["items"] == []


def test_a_user_contract_file_that_is_a_fifo_is_refused(world: Drafted) -> None:
    """Issue 12 item 11: ``hz heinzel new`` on a FIFO answers with a coded error, never blocks."""
    fifo = world.root / "contract.prose.md"
    os.mkfifo(fifo)
    result = world.hz("heinzel", "new", str(fifo), timeout=30)
    coded_only(result)
    assert result.returncode != 0


def _corrupt_pages(index: Path) -> None:
    """Overwrite every page after the first (the schema stays): "disk image is malformed"."""
    data = bytearray(index.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    data[page:] = b"\xa5" * (len(data) - page)
    index.write_bytes(bytes(data))


def test_a_malformed_index_is_rebuilt_from_the_spines(world: Drafted) -> None:
    """Issue 12 item 11: a malformed index page is rebuilt, never HZX001 nor an AssertionError."""
    index = world.home / "heinzel" / "index.sqlite"
    _corrupt_pages(index)
    listed = world.hz("heinzel", "list", "--json")
    coded_only(listed)
    assert listed.returncode == 0
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "dig" and row["pending_draft"] == world.draft_key()


def test_reindex_rebuilds_a_corrupt_index_itself(world: Drafted) -> None:
    """Issue 12 item 12: ``hz heinzel reindex`` rebuilds a corrupt index; no deleting by hand."""
    index = world.home / "heinzel" / "index.sqlite"
    index.write_bytes(b"this is not a database" * 100)
    result = world.hz("heinzel", "reindex")
    coded_only(result)
    assert result.returncode == 0
    assert world.hz("heinzel", "verify").returncode == 0
    (row,) = json.loads(world.hz("heinzel", "list", "--json").stdout)
    assert row["name"] == "dig"


def test_an_index_path_that_is_a_directory_gets_one_coded_line(world: Drafted) -> None:
    """Issue 12 item 11: an index that is a directory is named in one coded line, not a crash."""
    index = world.home / "heinzel" / "index.sqlite"
    index.unlink()
    index.mkdir()
    for command in (("heinzel", "list"), ("heinzel", "reindex"), ("tick", "--once")):
        result = world.hz(*command, timeout=30)
        coded_only(result)
        assert result.returncode == 1
        assert result.stderr.startswith("HZS090: ") and str(index) in result.stderr


def test_an_interrupted_turn_whose_body_is_gone_runs_again(world: Drafted) -> None:
    """Issue 12 item 11: a lost body means its replay-safe steps rerun, never an AssertionError."""
    (world.root / "notes" / "tuesday.md").write_text("# Tuesday\n- reviewed checkout\n")
    crash = {"now": "2026-12-02T09:00:00Z", "HZ_CRASH_AT": "step.done:outcome"}
    crashed = world.hz("heinzel", "wake", "dig", **crash)
    assert crashed.returncode != 0
    turn = str(world.events()[-1]["turn"])
    (world.heinzel_dir / "turns" / f"{turn}.jsonl").unlink()
    resumed = world.hz("heinzel", "resume", "dig", now="2026-12-02T09:01:00Z")
    coded_only(resumed)
    assert resumed.returncode == 0
    finished = [e for e in world.events() if e["kind"] == "turn.finished" and e["turn"] == turn]
    assert [e["data"]["disposition"] for e in finished] == ["drafted"]  # type: ignore[index]
    assert world.hz("heinzel", "verify").returncode == 0


@pytest.mark.parametrize("kind", ["fifo", "socket", "symlink"])
def test_a_source_cache_that_is_not_a_directory_is_refused_with_its_code(
    world: Drafted, kind: str
) -> None:
    """Issue 12 item 11: a FIFO, socket or link to a file as the source cache; never HZX001."""
    sources = world.home / "heinzel" / "sources"
    shutil.rmtree(sources)
    _replace(sources, kind)
    for command in (("heinzel", "wake", "dig"), ("tick", "--once")):
        result = world.hz(*command, now="2026-12-02T09:00:00Z", timeout=30)
        coded_only(result)
        assert result.returncode == 1
        said = result.stderr + result.stdout
        assert f"{sources}: refused" in said and "HZS090: " in said
