"""The real ``hz`` binary against real homes: listings, verify, and bad input without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hz_kernel.store.spine import SPINE_NAME, SpineWriter
from hz_kernel.vocabulary import HeinzelCreated, StepDone

HZ = [sys.executable, "-m", "hz_kernel.cli"]


def hz(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HZ_HOME": str(home)}
    return subprocess.run([*HZ, *args], capture_output=True, text=True, env=env, timeout=60)


def _one_coded_line(result: subprocess.CompletedProcess[str], code: str) -> None:
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{code}: "), lines[0]


def _python(home: Path, probe: str) -> subprocess.CompletedProcess[str]:
    """Run ``probe`` in a fresh interpreter on ``home``: what it imported is its own."""
    env = {**os.environ, "HZ_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )


def _heinzel(home: Path, name: str = "weekly", events: int = 3) -> Path:
    directory = home / "heinzel" / "hz-01JBCDEFGHJKMNPQRSTVWXYZ01"
    with SpineWriter.open(directory) as writer:
        writer.append(HeinzelCreated(name=name))
        for _ in range(events - 1):
            writer.append(StepDone(step="gather"))
    return directory


def test_list_and_show_on_a_real_home(tmp_path: Path) -> None:
    _heinzel(tmp_path)
    listed = hz(tmp_path, "heinzel", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "weekly" and row["state"] == "proposed"
    shown = hz(tmp_path, "heinzel", "show", "weekly", "--json")
    assert json.loads(shown.stdout)["heinzel"]["id"] == row["id"]
    assert hz(tmp_path, "heinzel", "verify").returncode == 0


def test_the_listing_reads_a_current_index_without_the_kernel_or_the_http_stack(
    tmp_path: Path,
) -> None:
    """``hz heinzel list`` over a current index imports none of the kernel's heavy parts, and
    builds no pydantic validator (the first one imports every package's metadata)."""
    _heinzel(tmp_path)
    assert hz(tmp_path, "heinzel", "list").returncode == 0  # builds the index
    probe = (
        "import contextlib, io, sys\n"
        "lazy = ('hz_kernel.kernel', 'importlib.metadata', 'pydantic.plugin._loader',"
        " 'platformdirs', 'tempfile')\n"
        "from hz_tui.entry import main\n"
        "sys.argv = ['hz', 'heinzel', 'list', '--json']\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    code = main()\n"
        "heavy = ('pydantic_ai', 'httpx', 'yaml', 'textual', 'rich', 'pygments', 'click')\n"
        "loaded = sorted({m.partition('.')[0] for m in sys.modules if m.partition('.')[0] in heavy}"
        " | {m for m in sys.modules if m in lazy})\n"
        "print(code, len(__import__('json').loads(out.getvalue())), loaded)\n"
    )
    done = _python(tmp_path, probe)
    assert done.stdout.strip() == "0 1 []", done.stdout + done.stderr


def test_the_kernel_and_commands_that_run_no_turn_leave_pydantic_ai_unloaded(
    tmp_path: Path,
) -> None:
    """Every embedded ``hz`` command imports the kernel; only a turn needs pydantic-ai (and
    genai-prices, to price it), and only a tick's fetch of an ``http`` source httpx."""
    _heinzel(tmp_path)
    probe = textwrap.dedent("""
        import contextlib, io, sys
        import hz_kernel.kernel
        from hz_tui.entry import main
        def loaded():
            return [m for m in ('pydantic_ai', 'httpx', 'genai_prices') if m in sys.modules]
        seen = [loaded()]
        for argv in (['heinzel', 'list'], ['heinzel', 'show', 'weekly', '--json']):
            sys.argv = ['hz', *argv]
            with contextlib.redirect_stdout(io.StringIO()):
                seen.append(main())
        print(seen + [loaded()])
    """)
    done = _python(tmp_path, probe)
    assert done.stdout.strip() == "[[], 0, 0, []]", done.stdout + done.stderr


def test_missing_home(tmp_path: Path) -> None:
    result = hz(tmp_path / "nope", "heinzel", "list")
    assert result.returncode == 1
    _one_coded_line(result, "HZS001")


def test_spine_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "heinzel" / "hz-01JBCDEFGHJKMNPQRSTVWXYZ01" / SPINE_NAME).mkdir(parents=True)
    result = hz(tmp_path, "heinzel", "verify", "hz-01JBCDEFGHJKMNPQRSTVWXYZ01")
    assert result.returncode == 1
    _one_coded_line(result, "HZS011")


@pytest.mark.parametrize(
    ("bad_line", "problem"),
    [(b"[1, 2, 3]", "not-an-object"), (b'"x' + b"y" * (10 * 1024 * 1024) + b'"', "too-long")],
    ids=["json-not-an-object", "ten-megabyte-line"],
)
def test_bad_lines_get_a_coded_error(tmp_path: Path, bad_line: bytes, problem: str) -> None:
    directory = _heinzel(tmp_path)
    spine = directory / SPINE_NAME
    lines = spine.read_bytes().split(b"\n")
    lines.insert(1, bad_line)
    spine.write_bytes(b"\n".join(lines))
    result = hz(tmp_path, "heinzel", "verify", "weekly", "--json")
    assert result.returncode == 1
    _one_coded_line(result, "HZS033")
    (report,) = json.loads(result.stdout)
    assert report["problems"][0]["problem"] == problem
    listed = hz(tmp_path, "heinzel", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["damaged"] is True


def test_unknown_heinzel_and_usage_errors(tmp_path: Path) -> None:
    result = hz(tmp_path, "heinzel", "show", "nobody")
    assert result.returncode == 2
    _one_coded_line(result, "HZU010")
    result = hz(tmp_path, "heinzel", "frobnicate")
    assert result.returncode == 2
    _one_coded_line(result, "HZU000")


def test_a_mistyped_heinzel_name_names_the_closest_one(tmp_path: Path) -> None:
    """A typo in a name says which heinzel was meant; a name like none says where they are."""
    _heinzel(tmp_path, "weekly")
    result = hz(tmp_path, "heinzel", "show", "weekyl")
    assert result.returncode == 2
    _one_coded_line(result, "HZU010")
    assert result.stderr.strip().endswith("did you mean weekly?")
    result = hz(tmp_path, "heinzel", "show", "zzzz")
    _one_coded_line(result, "HZU010")
    assert "hz heinzel list" in result.stderr
