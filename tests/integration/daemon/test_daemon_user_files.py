"""Attack on issue 14, point 6: a refusal the user's own files cause is a 4xx, never a 500.

A real daemon (``hz daemon start``) and a real draft; its document is
replaced by a directory, a FIFO, a symbolic link or a binary file, and
``draft.review`` is asked over the wire. The answer keeps its documents code
(HZE041–HZE043) and comes as 409: the request was fine, the file is not.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from daemon_helpers import Daemons, discovery, hz

from hz_kernel.daemon.protocol import OP_PREFIX, PROTOCOL_HEADER, PROTOCOL_VERSION
from tests.tui import worlds

EXPECTED = {"directory": "HZE041", "fifo": "HZE041", "symlink": "HZE042", "binary": "HZE043"}


def _replace(document: Path, kind: str) -> None:
    text = document.read_text()
    document.unlink()
    if kind == "directory":
        document.mkdir()
    elif kind == "fifo":
        os.mkfifo(document)
    elif kind == "symlink":
        real = document.with_name("real.md")
        real.write_text(text)
        document.symlink_to(real)
    else:
        document.write_bytes(b"\x00\xff\xfe binary\x00")


@pytest.mark.parametrize("kind", sorted(EXPECTED))
async def test_attack6_draft_review_of_a_replaced_document_is_a_4xx_with_its_code(
    tmp_path: Path, daemons: Daemons, kind: str
) -> None:
    world = await worlds.build(tmp_path, names=("notes-digest",))
    daemons.start(world.home, env={"HZ_TICK_SECONDS": "3600"})
    try:
        found = discovery(world.home)
        headers = {
            "authorization": f"Bearer {found.token}",
            PROTOCOL_HEADER: str(PROTOCOL_VERSION),
        }
        async with httpx.AsyncClient(base_url=found.address, trust_env=False, timeout=30) as raw:
            listed = await raw.post(OP_PREFIX + "drafts", json={}, headers=headers)
            assert listed.status_code == 200, listed.text[:300]
            key = listed.json()["items"][0]["key"]
            _replace(world.document("notes-digest"), kind)
            answer = await raw.post(OP_PREFIX + "draft.review", json={"key": key}, headers=headers)
        assert answer.json()["code"] == EXPECTED[kind], answer.text[:300]
        assert answer.status_code == 409, answer.text[:300]
    finally:
        hz(world.home.root, "daemon", "stop")


async def test_attack5_a_special_entry_in_the_inbox_is_skipped_and_said_by_the_conversation(
    tmp_path: Path, daemons: Daemons
) -> None:
    """A directory and a FIFO named like requests: the conversation still answers (200), with
    the messages that are files and one HZS090 line per entry it skipped."""
    world = await worlds.build(tmp_path, names=("notes-digest",))
    sent = hz(world.home.root, "heinzel", "chat", "notes-digest", "shorter please")
    assert sent.returncode == 0, sent.stderr
    inbox = world.home.heinzel_dir(world.ids["notes-digest"]) / "inbox"
    (inbox / "dir.json").mkdir()
    os.mkfifo(inbox / "pipe.json")
    daemons.start(world.home, env={"HZ_TICK_SECONDS": "3600"})
    try:
        found = discovery(world.home)
        headers = {
            "authorization": f"Bearer {found.token}",
            PROTOCOL_HEADER: str(PROTOCOL_VERSION),
        }
        async with httpx.AsyncClient(base_url=found.address, trust_env=False, timeout=30) as raw:
            answer = await raw.post(
                OP_PREFIX + "heinzel.conversation", json={"ref": "notes-digest"}, headers=headers
            )
        assert answer.status_code == 200, answer.text[:300]
        body = answer.json()
        assert [item["message"] for item in body["items"]] == ["shorter please"]
        assert sorted(line.split(":")[0] for line in body["skipped"]) == ["HZS090", "HZS090"]
        assert any("dir.json" in line and "directory" in line for line in body["skipped"])
        assert any("pipe.json" in line and "FIFO" in line for line in body["skipped"])
    finally:
        hz(world.home.root, "daemon", "stop")
