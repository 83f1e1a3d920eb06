"""Contract versions on disk: private, atomic, kept forever, never rewritten with other text."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from contract_samples import WEEKLY

from hz_kernel.contracts import ContractError, ContractVersions, compile_contract

V2 = WEEKLY.replace("max_usd: 0.5", "max_usd: 0.25")


def store(tmp_path: Path) -> ContractVersions:
    return ContractVersions(tmp_path / "hz-01J0000000000000000000000")


def write(versions: ContractVersions, number: int, text: str) -> None:
    versions.write(number, text, compile_contract(text, source=f"v{number}"))


def error_of(call: object, *args: object) -> ContractError:
    with pytest.raises(ContractError) as caught:
        call(*args)  # type: ignore[operator]
    return caught.value


def test_an_empty_heinzel_has_no_versions(tmp_path: Path) -> None:
    versions = store(tmp_path)
    assert versions.all() == []
    assert versions.latest() is None
    assert error_of(versions.read, 1).code == "HZC082"


def test_write_and_read_versions(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)
    write(versions, 2, V2)

    assert versions.all() == [1, 2]
    assert versions.latest() == 2
    text, compiled = versions.read(2)
    assert text == V2
    assert compiled == compile_contract(V2, source="x")
    assert (versions.directory / "v1.prose.md").read_text(encoding="utf-8") == WEEKLY
    assert (versions.directory / "v1.compiled.json").is_file()


def test_files_are_private(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)

    assert stat.S_IMODE(versions.directory.stat().st_mode) == 0o700
    for path in versions.directory.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in versions.directory.iterdir() if p.name.startswith(".")]


def test_writing_the_same_version_again_is_a_no_op(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)
    before = (versions.directory / "v1.prose.md").stat().st_mtime_ns

    write(versions, 1, WEEKLY)

    assert versions.all() == [1]
    assert (versions.directory / "v1.prose.md").stat().st_mtime_ns == before


def test_a_version_is_never_rewritten_with_other_text(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)

    error = error_of(write, versions, 1, V2)

    assert error.code == "HZC080"
    assert "write version 2" in error.message
    assert versions.read(1)[0] == WEEKLY


def test_versions_are_numbered_without_gaps(tmp_path: Path) -> None:
    versions = store(tmp_path)
    assert error_of(write, versions, 2, WEEKLY).code == "HZC083"
    assert error_of(write, versions, 0, WEEKLY).code == "HZC083"
    write(versions, 1, WEEKLY)
    assert error_of(write, versions, 3, V2).code == "HZC083"


def test_the_compiled_form_must_match_the_text(tmp_path: Path) -> None:
    versions = store(tmp_path)
    error = error_of(versions.write, 1, WEEKLY, compile_contract(V2, source="x"))
    assert error.code == "HZC084"
    assert versions.all() == []


def test_an_invalid_text_is_not_stored(tmp_path: Path) -> None:
    versions = store(tmp_path)
    broken = WEEKLY.replace("### Goal", "### Aim")
    with pytest.raises(ContractError) as caught:
        versions.write(1, broken, compile_contract(WEEKLY, source="x"))
    assert caught.value.code == "HZC045"
    assert versions.all() == []


def test_a_crash_between_the_two_files_is_repaired_by_writing_again(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)
    (versions.directory / "v1.compiled.json").unlink()
    assert error_of(versions.read, 1).code == "HZC081"

    write(versions, 1, WEEKLY)

    assert versions.read(1)[1].fingerprint == compile_contract(WEEKLY, source="x").fingerprint


def test_a_compiled_file_without_its_text_is_not_a_version(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)
    (versions.directory / "v2.compiled.json").write_text("{}", encoding="utf-8")

    assert versions.latest() == 1
    write(versions, 2, V2)
    assert versions.read(2)[0] == V2


def test_damage_and_symlinks_are_errors_not_crashes(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)
    (versions.directory / "v1.compiled.json").write_text("{not json", encoding="utf-8")
    assert error_of(versions.read, 1).code == "HZC081"
    write(versions, 1, WEEKLY)
    assert versions.read(1)[1] == compile_contract(WEEKLY, source="x")

    elsewhere = tmp_path / "elsewhere.prose.md"
    elsewhere.write_text(V2, encoding="utf-8")
    os.symlink(elsewhere, versions.directory / "v2.prose.md")
    assert versions.all() == [1]
    assert error_of(versions.read, 2).code == "HZC081"


def test_diff_between_versions(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY)
    write(versions, 2, V2)

    diff = versions.diff(1, 2)

    assert diff.startswith("--- v1.prose.md\n+++ v2.prose.md\n")
    assert "-    max_usd: 0.5\n+    max_usd: 0.25\n" in diff
    assert versions.diff(1, 1) == ""
    assert error_of(versions.diff, 1, 3).code == "HZC082"


def test_diff_of_texts_without_a_final_newline(tmp_path: Path) -> None:
    versions = store(tmp_path)
    write(versions, 1, WEEKLY.rstrip("\n"))
    write(versions, 2, WEEKLY.rstrip("\n") + " Truly.")

    assert versions.diff(1, 2).endswith("+Every merged pull request appears once. Truly.\n")
