"""The shell source running real commands under /bin/sh."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest
from sources_helpers import NOW

from hz_kernel.adapters.sources import FetchResult, ShellSource, SourceRequest
from hz_kernel.adapters.sources.base import OUTPUT_CAP_BYTES
from hz_kernel.errors import HzError


def run(base_dir: Path, command: str, **args: Any) -> FetchResult:
    request = SourceRequest(source="shell", method="run", args={"command": command, **args})
    return ShellSource(base_dir=base_dir).fetch(request, now=NOW, previous=None)


def test_stdout_is_the_facet(tmp_path: Path) -> None:
    result = run(tmp_path, "printf 'one\\ntwo\\n'; echo noise >&2")
    assert result.facets == {"stdout": hashlib.sha256(b"one\ntwo\n").hexdigest()}
    assert result.content == {"stdout": "one\ntwo\n"}
    assert run(tmp_path, "printf 'one\\ntwo\\n'").fingerprint() == result.fingerprint()
    assert run(tmp_path, "echo three").fingerprint() != result.fingerprint()


def test_cwd_resolves_against_base_dir(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "marker").write_text("here")
    assert run(tmp_path, "cat marker", cwd="work").content["stdout"] == "here"
    assert run(tmp_path / "work", "cat marker").content["stdout"] == "here"


def test_a_failing_command_reports_its_exit_code_and_first_error_line(tmp_path: Path) -> None:
    with pytest.raises(HzError) as caught:
        run(tmp_path, "echo partial; echo 'first problem' >&2; echo second >&2; exit 3")
    assert caught.value.code == "HZT040"
    assert "exited with 3: first problem" in caught.value.message
    assert caught.value.place == "shell:run"
    with pytest.raises(HzError) as caught:
        run(tmp_path, "definitely-not-a-command-hz")
    assert caught.value.code == "HZT040"
    assert "127" in caught.value.message


def test_a_timeout_stops_the_command_and_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(HzError) as caught:
        run(tmp_path, f"sleep 30 & echo $! > {pid_file}; wait", timeout=0.5)
    assert caught.value.code == "HZT041"
    assert time.monotonic() - started < 5
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(") ")[-1].startswith("Z"))


def test_output_is_capped(tmp_path: Path) -> None:
    size = OUTPUT_CAP_BYTES + 4096
    result = run(tmp_path, f"head -c {size} /dev/zero | tr '\\0' a")
    expected = hashlib.sha256(b"a" * size).hexdigest()
    assert result.facets["stdout"] == expected
    assert result.content["stdout"].startswith("a" * 100)
    assert f"{size} bytes in all" in result.content["stdout"]
    assert len(result.content["stdout"]) < OUTPUT_CAP_BYTES + 200


def test_a_missing_working_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HzError) as caught:
        run(tmp_path, "true", cwd="absent")
    assert caught.value.code == "HZT042"
