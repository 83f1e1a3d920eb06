"""The documents adapter against the file system: concurrent saves, modes, endings, bad input."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hz_kernel.adapters.documents import DraftStatus, MarkdownDocuments
from hz_kernel.adapters.documents.files import MAX_DOCUMENT_BYTES
from hz_kernel.errors import HzError

HEINZEL = "hz-01JBX7Q4ZP8M3V9K2D5T6W1RNE"
KEY = f"{HEINZEL}@v1@2026-10-30T15:00@doc:reports/weekly.md#checkout"
REPORT = "# Weekly report\n\nIntro by Priya.\n\n## Checkout\n\nLast week's notes.\n"

APPEND_AS_USER = """
import sys
with open(sys.argv[1], "a", encoding="utf-8") as document:
    document.write(sys.argv[2])
"""


def place(docs: MarkdownDocuments, path: Path, key: str = KEY, heinzel: str = HEINZEL):
    return docs.place_draft(
        path,
        "checkout",
        key=key,
        heinzel_name="weekly-report",
        heinzel_id=heinzel,
        contract_version=1,
        text="- one\n- two",
    )


def save_as_another_process(path: Path, addition: str) -> None:
    subprocess.run([sys.executable, "-c", APPEND_AS_USER, str(path), addition], check=True)


def no_temp_files_left(directory: Path) -> bool:
    return not [entry for entry in os.listdir(directory) if entry.endswith(".hz-tmp")]


def test_a_user_save_between_read_and_rename_survives(tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    saves: list[str] = []

    def user_saves_once(target: Path) -> None:
        if not saves:
            saves.append("saved")
            save_as_another_process(target, "\nPriya's closing line.\n")

    docs = MarkdownDocuments(before_commit=user_saves_once)
    placed = place(docs, path)

    text = path.read_text()
    assert saves == ["saved"]
    assert text.endswith("Last week's notes.\n\nPriya's closing line.\n")
    assert MarkdownDocuments().find(path, KEY) == placed.section
    assert no_temp_files_left(tmp_path)


def test_a_document_that_never_stops_changing_is_left_to_the_user(tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    docs = MarkdownDocuments(
        max_attempts=3, before_commit=lambda target: save_as_another_process(target, "typing\n")
    )

    with pytest.raises(HzError) as caught:
        place(docs, path)

    assert caught.value.code == "HZE048"
    assert path.read_text() == REPORT + "typing\n" * 3
    assert no_temp_files_left(tmp_path)


def test_a_file_created_by_the_user_meanwhile_is_not_overwritten(tmp_path):
    path = tmp_path / "new.md"
    created: list[bool] = []

    def user_creates(target: Path) -> None:
        if not created:
            created.append(True)
            save_as_another_process(target, "# The user's own start\n")

    place(MarkdownDocuments(before_commit=user_creates), path)

    assert path.read_text().startswith("# The user's own start\n\n## Checkout\n\n<!-- hz:begin")


def test_two_heinzels_placing_into_one_document_at_once_both_land(tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    docs = MarkdownDocuments()
    heinzels = [f"hz-01JBX7Q4ZP8M3V9K2D5T6W1R{suffix:02d}" for suffix in range(6)]
    errors: list[BaseException] = []

    def run(heinzel: str) -> None:
        try:
            place(docs, path, key=f"{heinzel}@v1@slot@doc:weekly.md#checkout", heinzel=heinzel)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(heinzel,)) for heinzel in heinzels]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(s.heinzel_id for s in docs.pending_sections(path)) == sorted(heinzels)


def test_a_new_document_is_private(tmp_path):
    path = tmp_path / "weekly.md"
    place(MarkdownDocuments(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_existing_document_keeps_its_mode(tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    path.chmod(0o640)
    place(MarkdownDocuments(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_crlf_documents_keep_crlf_and_the_users_bytes(tmp_path):
    path = tmp_path / "weekly.md"
    original = REPORT.replace("\n", "\r\n").encode()
    path.write_bytes(original)
    docs = MarkdownDocuments()

    place(docs, path)
    data = path.read_bytes()

    assert data.count(b"\n") == data.count(b"\r\n")
    head, _, tail = original.partition(b"Last week's notes.")
    assert data.startswith(head) and data.endswith(b"Last week's notes." + tail)
    assert docs.draft_state(path, KEY, placed_text="- one\n- two").status is DraftStatus.PLACED
    docs.approve_draft(path, KEY)
    assert path.read_bytes().count(b"\n") == path.read_bytes().count(b"\r\n")
    docs.remove_draft(path, KEY)
    assert path.read_bytes() == original


def test_a_byte_order_mark_is_kept(tmp_path):
    path = tmp_path / "weekly.md"
    path.write_bytes(b"\xef\xbb\xbf" + REPORT.encode())
    place(MarkdownDocuments(), path)
    assert path.read_bytes().startswith(b"\xef\xbb\xbf# Weekly report\n")


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "HZE043"),
        (b"# caf\xe9\n", "HZE043"),
    ],
)
def test_binary_or_undecodable_files_are_refused(tmp_path, content, code):
    path = tmp_path / "weekly.md"
    path.write_bytes(content)
    docs = MarkdownDocuments()
    for call in (lambda: place(docs, path), lambda: docs.find(path, KEY)):
        with pytest.raises(HzError) as caught:
            call()
        assert (caught.value.code, caught.value.place) == (code, str(path))
    assert path.read_bytes() == content


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(HzError) as caught:
        place(MarkdownDocuments(), tmp_path)
    assert caught.value.code == "HZE041"


def test_a_fifo_is_refused_without_hanging(tmp_path):
    path = tmp_path / "pipe.md"
    os.mkfifo(path)
    with pytest.raises(HzError) as caught:
        MarkdownDocuments().find(path, KEY)
    assert caught.value.code == "HZE041"


def test_a_symlink_is_refused_and_left_alone(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    real = outside / "secret.md"
    real.write_text("# Secret\n")
    link = tmp_path / "weekly.md"
    link.symlink_to(real)

    with pytest.raises(HzError) as caught:
        place(MarkdownDocuments(), link)

    assert (caught.value.code, caught.value.place) == ("HZE042", str(link))
    assert link.is_symlink() and real.read_text() == "# Secret\n"


def test_a_missing_parent_directory_is_an_error(tmp_path):
    path = tmp_path / "no" / "such" / "weekly.md"
    with pytest.raises(HzError) as caught:
        place(MarkdownDocuments(), path)
    assert caught.value.code == "HZE040"
    assert not (tmp_path / "no").exists()


def test_a_huge_file_is_refused(tmp_path):
    path = tmp_path / "weekly.md"
    with path.open("wb") as handle:
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    with pytest.raises(HzError) as caught:
        MarkdownDocuments().pending_sections(path)
    assert caught.value.code == "HZE044"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"key": ""}, "key"),
        ({"key": "a\nb"}, "key"),
        ({"heinzel_id": "hz 01"}, "heinzel id"),
        ({"heinzel_name": "two\nlines"}, "name"),
        ({"contract_version": 0}, "version"),
        ({"text": "  \n\n"}, "empty"),
        ({"text": "ok\n<!-- hz:end key=x -->"}, "reserves"),
        ({"text": "> 🧝 DRAFT (fake v9)"}, "reserves"),
        ({"anchor": "!!!"}, "anchor"),
    ],
)
def test_bad_arguments_are_refused_before_touching_the_file(tmp_path, arguments, fragment):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    call = {
        "key": KEY,
        "heinzel_name": "weekly-report",
        "heinzel_id": HEINZEL,
        "contract_version": 1,
        "text": "- one",
        "anchor": "checkout",
    } | arguments
    anchor = call.pop("anchor")

    with pytest.raises(HzError) as caught:
        MarkdownDocuments().place_draft(path, anchor, **call)

    assert caught.value.code == "HZE046"
    assert fragment in caught.value.message
    assert path.read_text() == REPORT


def test_a_section_with_a_lost_end_marker_is_reported_not_guessed(tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    docs = MarkdownDocuments()
    place(docs, path)
    broken = "".join(line for line in path.read_text().splitlines(True) if "hz:end" not in line)
    path.write_text(broken)

    for call in (
        lambda: docs.find(path, KEY),
        lambda: docs.draft_state(path, KEY, placed_text="- one\n- two"),
        lambda: place(docs, path),
        lambda: docs.remove_draft(path, KEY),
    ):
        with pytest.raises(HzError) as caught:
            call()
        assert caught.value.code == "HZE047"
    assert path.read_text() == broken
    other = f"{HEINZEL}@v1@other-slot@doc:reports/weekly.md#checkout"
    assert docs.find(path, other) is None
