"""The real ``hz`` binary behaves like a good command line (issue 12 items 12, 13 and 14).

Every run has a timeout: a command that hangs after its error fails its test
instead of stalling the suite. Clocks are pinned with ``HZ_NOW``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hz_kernel.cli import build_parser
from hz_kernel.store.spine import LOCK_NAME, SpineWriter
from hz_kernel.vocabulary import DraftPlaced, HeinzelCreated, LessonRecorded
from tests.support.env import hz_env
from tests.support.homes import World, digest_contract, make_world

HZ = Path(sys.executable).parent / "hz"
NOW = "2026-12-01T09:00:30Z"
HEINZEL = "hz-01JBCDEFGHJKMNPQRSTVWXYZ01"
#: What may never reach a terminal raw: C0 controls but newline and tab, DEL and C1.
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
TIMEOUT_S = 60


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = hz_env(home, **({"HZ_NOW": NOW, "COLUMNS": "200"} | extra))
    # Without PYTHONUNBUFFERED, output reaches a pipe only when hz flushes it.
    env.pop("PYTHONUNBUFFERED", None)
    return env


def hz(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [str(HZ), *args],
            capture_output=True,
            text=True,
            env=_env(home, **extra),
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"hz {' '.join(args)} did not exit: {hung.stderr!r}") from None


def _one_coded_line(result: subprocess.CompletedProcess[str], code: str = "HZ") -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(code), lines[0]
    return lines[0]


def _proposed(root: Path) -> World:
    world = make_world(root)
    contract = root / "digest.prose.md"
    contract.write_text(digest_contract())
    assert hz(world.home, "heinzel", "new", str(contract)).returncode == 0
    return world


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A home with the digest contract proposed as ``notes-digest``."""
    return _proposed(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> World:
    """Like ``world``, for tests that change nothing of it (argument errors, read-only output)."""
    return _proposed(tmp_path_factory.mktemp("shared"))


# --- item 12: every command ends after its error --------------------------------------------


def _lock_is_a_directory(home: Path) -> None:
    heinzel_dir = home / "heinzel" / HEINZEL
    with SpineWriter.open(heinzel_dir) as writer:
        writer.append(HeinzelCreated(name="weekly"))
    lock = heinzel_dir / LOCK_NAME
    lock.unlink(missing_ok=True)
    lock.mkdir()


def test_a_heinzel_whose_lock_cannot_be_taken_is_a_warning_and_the_list_still_answers(
    tmp_path: Path,
) -> None:
    """Attack pass (issue 14): one heinzel folder hz cannot lock (here its lock is a
    directory) is one coded line; the listing answers (it used to fail whole)."""
    home = tmp_path / "home"
    home.mkdir()
    _lock_is_a_directory(home)
    result = hz(home, "heinzel", "list")
    assert result.returncode == 0
    assert LOCK_NAME in _one_coded_line(result, "HZS090")
    assert "weekly" in result.stdout


@pytest.mark.parametrize(
    ("setup", "args", "env", "code", "exit_code"),
    [
        (None, ("heinzel", "list"), {"HZ_NOW": "yesterday"}, "HZU001", 2),
        (None, ("heinzel", "show", "x"), {"HZ_NOW": "yesterday"}, "HZU001", 2),
        (None, ("tick",), {"HZ_TICK_SECONDS": "soon"}, "HZT104", 1),
        (None, ("tick", "--once"), {"HZ_TICK_SECONDS": "soon"}, "HZT104", 1),
    ],
    ids=["bad-clock-list", "bad-clock-show", "tick-loop", "tick-once"],
)
def test_a_failure_while_the_kernel_opens_still_ends_the_command(
    tmp_path: Path,
    setup: object,
    args: tuple[str, ...],
    env: dict[str, str],
    code: str,
    exit_code: int,
) -> None:
    """issue 12 item 12: the coded line is printed and the process exits (it used to hang)."""
    home = tmp_path / "home"
    home.mkdir()
    if callable(setup):
        setup(home)
    result = hz(home, *args, **env)
    assert result.returncode == exit_code
    _one_coded_line(result, code)


def test_bad_settings_found_by_the_tick_still_end_it(tmp_path: Path) -> None:
    """issue 12 item 12: ``hz tick`` reading a bad ``hz.toml`` after the kernel opened exits."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "hz.toml").write_text('[daemon]\ntick_seconds = "often"\n')
    result = hz(home, "tick")
    assert result.returncode == 1
    _one_coded_line(result, "HZS062")


# --- item 14: pipes, usage errors, suggestions, help --------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("heinzel", "list"),
        ("heinzel", "show", "notes-digest"),
        ("heinzel", "show", "notes-digest", "--json"),
        ("heinzel", "templates"),
        ("tick", "--once"),
    ],
)
def test_output_into_a_pipe_nobody_reads_ends_quietly(shared: World, args: tuple[str, ...]) -> None:
    """issue 12 item 14: ``hz ... | head`` gone early: no HZX001 BrokenPipeError, exit 141."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [str(HZ), *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(shared.home),
            timeout=TIMEOUT_S,
        )
    finally:
        os.close(write_end)
    assert result.stderr == ""
    assert result.returncode == 141


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("heinzel", "new"), "HZU032"),
        (("heinzel", "new", "--template", "digest", "a sentence"), "HZU032"),
        (("heinzel", "list", "--where", "team"), "HZU022"),
        (("heinzel", "new", "--template", "digest", "--param", "name"), "HZU023"),
        (("heinzel", "new", "missing.prose.md"), "HZU024"),
        (("heinzel", "wake", "notes-digest", "--request-id", "r" * 100), "HZU101"),
        (("heinzel", "chat", "notes-digest", "hi", "--request-id", "r" * 100), "HZU101"),
        (("heinzel", "chat", "notes-digest", "hi", "--request-id", "../x"), "HZU101"),
        (("heinzel", "show"), "HZU000"),
        (("heinzle",), "HZU000"),
        (("tick", "--bogus"), "HZU000"),
    ],
)
def test_every_usage_error_exits_2_with_one_coded_line(
    shared: World, args: tuple[str, ...], code: str
) -> None:
    """issue 12 item 14: wrong arguments are usage errors: exit 2, never 1 or HZX001."""
    result = hz(shared.home, *args)
    assert result.returncode == 2, result.stderr
    _one_coded_line(result, code)


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (("heinzle",), "heinzel"),
        (("drafs",), "drafts"),
        (("aprove", "notes-digest"), "approve"),
        (("heinzel", "lst"), "list"),
        (("heinzel", "lesons", "notes-digest"), "lessons"),
        (("daemon", "strat"), "start"),
        (("heinzel", "list", "--state", "aslep"), "asleep"),
    ],
)
def test_a_mistyped_command_suggests_the_right_one(
    shared: World, args: tuple[str, ...], meant: str
) -> None:
    """issue 12 item 14: at every level of subcommands, "did you mean ...?"."""
    result = hz(shared.home, *args)
    assert result.returncode == 2
    line = _one_coded_line(result, "HZU000")
    assert f"did you mean {meant}?" in line


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
    tuple[tuple[str, ...], str]
]:  # fmt: skip
    """Every subcommand's words and the one line its parent lists it with."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), str(helps[name])
                yield from _commands(sub, (*path, name))


def _help(words: tuple[str, ...]) -> str:
    """What ``hz WORDS --help`` prints, asked of the CLI's own parser in this process."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as ended:
        build_parser().parse_args([*words, "--help"])
    assert ended.value.code == 0, words
    return printed.getvalue()


def test_every_subcommand_help_opens_with_its_one_line_description(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 12 item 14: ``hz heinzel show --help`` says what ``show`` does, for every command.

    Every command's help is asked of the parser in this process (one interpreter start per
    command proves nothing more); the real ``hz`` prints the same text for one of them."""
    monkeypatch.setenv("COLUMNS", _env(tmp_path)["COLUMNS"])
    real = hz(tmp_path, "heinzel", "show", "--help")
    assert real.returncode == 0, real.stderr
    assert real.stdout == _help(("heinzel", "show"))
    commands = list(_commands(build_parser()))
    assert len(commands) > 25
    for words, listed in commands:
        blocks = _help(words).split("\n\n")
        assert blocks[0].startswith(f"usage: hz {' '.join(words)}"), words
        description = blocks[1].strip()
        assert description == " ".join(listed.split()), (words, blocks)
        assert "\n" not in description


def test_tick_json_in_a_loop_prints_one_compact_object_per_line(tmp_path: Path) -> None:
    """issue 12 item 14: each tick is one JSON line, flushed as it happens (JSON lines)."""
    home = tmp_path / "home"
    home.mkdir()
    process = subprocess.Popen(
        [str(HZ), "tick", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home, HZ_TICK_SECONDS="0.2"),
    )
    watchdog = threading.Timer(TIMEOUT_S, process.kill)
    watchdog.start()
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=TIMEOUT_S)
        watchdog.cancel()
    for line in lines:
        assert line.endswith("\n") and line.count("\n") == 1, lines
        report = json.loads(line)
        assert isinstance(report, dict) and "at" in report and "due" in report


def test_a_missing_repository_is_named_in_the_error(tmp_path: Path) -> None:
    """issue 12 item 14: HZT030 says which path is not a git repository."""
    world = make_world(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    made = hz(
        world.home, "heinzel", "new", "--template", "weekly-report",
        "--param", f"repo={plain}", "--param", "notes=notes",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert hz(world.home, "approve", "weekly-report").returncode == 0
    woke = hz(world.home, "heinzel", "wake", "weekly-report")
    assert woke.returncode == 1 and woke.stdout == "weekly-report: failed\n"
    (line,) = woke.stderr.splitlines()
    assert line.startswith(f"HZT030: {plain}: not a git repository"), "one coded line on stderr"
    shown = hz(world.home, "heinzel", "show", "weekly-report")
    assert f"HZT030: {plain}" in shown.stdout


def test_stop_with_nothing_running_says_so_in_words(world: World) -> None:
    """issue 12 item 14: not "notes-digest: none"."""
    assert hz(world.home, "approve", "notes-digest").returncode == 0
    result = hz(world.home, "heinzel", "stop", "notes-digest")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "notes-digest: no turn is running; nothing to stop\n"


def test_a_sentence_no_template_fits_is_refused_with_what_hz_can_make(tmp_path: Path) -> None:
    """issue 12 item 14: "write me a poem" is never silently turned into a digest."""
    world = make_world(tmp_path)
    result = hz(world.home, "heinzel", "new", "write me a poem")
    assert result.returncode == 2
    line = _one_coded_line(result, "HZU100")
    assert all(name in line for name in ("changelog", "digest", "weekly-report"))
    listed = hz(world.home, "heinzel", "list", "--json")
    assert json.loads(listed.stdout) == []


def test_a_sentence_that_ends_in_a_file_name_is_a_sentence(tmp_path: Path) -> None:
    """New-user pass: "keep a digest of the notes folder in digest2.md" was read as a contract
    file's name (HZU024: no such file); a one-word name ending in .md still is one."""
    world = make_world(tmp_path)
    made = hz(world.home, "heinzel", "new", "keep a digest of the notes folder in digest2.md")
    assert made.returncode == 0, made.stderr
    assert "proposed digest" in made.stdout
    missing = hz(world.home, "heinzel", "new", "missing.md")
    assert missing.returncode == 2 and missing.stderr.startswith("HZU024")


# --- item 13: terminal control characters in data -------------------------------------------


def test_a_lesson_formed_from_a_line_with_escapes_never_carries_them(world: World) -> None:
    """issue 12 item 13: a deleted line holding ESC sequences teaches a lesson without them."""
    (world.notes / "monday.md").write_text(
        "# Monday\n- fixed the \x1b[31mlogin\x1b[0m bug\x1b]0;pwned\x07\n- shipped search\n"
    )
    assert hz(world.home, "approve", "notes-digest").returncode == 0
    assert hz(world.home, "heinzel", "wake", "notes-digest").returncode == 0
    document = world.root / "reports" / "digest.md"
    placed = document.read_text()
    assert "\x1b[31m" in placed
    edited = re.sub(r"> 🧝 DRAFT.*\n", "", placed)
    edited = re.sub(r"- fixed the .*\n", "", edited)
    document.write_text(edited)
    later = {"HZ_NOW": "2026-12-01T10:00:00Z"}
    assert hz(world.home, "tick", "--once", **later).returncode == 0
    listed = hz(world.home, "heinzel", "lessons", "notes-digest", "--json", **later)
    lessons = [lesson["lesson"] for lesson in json.loads(listed.stdout)]
    assert lessons, "the edit taught nothing"
    assert not any(RAW_CONTROL.search(lesson) for lesson in lessons), lessons
    spine = (world.home / "heinzel").glob("hz-*/session.jsonl")
    assert not any("\\u001b" in path.read_text() for path in spine)


def test_control_characters_in_recorded_text_never_reach_the_terminal(tmp_path: Path) -> None:
    """issue 12 item 13: show, lessons, drafts and error lines print escapes visibly, never raw.

    The spine is written directly, as one recorded before lessons were cleaned would be.
    """
    home = tmp_path / "home"
    with SpineWriter.open(home / "heinzel" / HEINZEL) as writer:
        writer.append(HeinzelCreated(name="weekly"))
        writer.append(LessonRecorded(lesson_id="L1", lesson="No \x1b[2J\x1b]0;pwned\x07 \x9b31m"))
        writer.append(
            DraftPlaced(
                key=f"{HEINZEL}@k\x1b[5m",
                asset="doc:r.md#x\x1b[31m",
                hash="a" * 64,
                size=1,
                contract_version=1,
            )
        )
    for args in (
        ("heinzel", "show", "weekly"),
        ("heinzel", "lessons", "weekly"),
        ("drafts",),
        ("heinzel", "show", "weekly\x1b[2J"),
    ):
        result = hz(home, *args)
        assert not RAW_CONTROL.search(result.stdout + result.stderr), (args, result)
        assert "\\u001b" in result.stdout + result.stderr, args
    as_json = hz(home, "heinzel", "lessons", "weekly", "--json")
    assert not RAW_CONTROL.search(as_json.stdout)
    assert json.loads(as_json.stdout)[0]["lesson"] == "No \x1b[2J\x1b]0;pwned\x07 \x9b31m"


def test_a_turn_failed_by_the_model_says_why_in_show(tmp_path: Path) -> None:
    """issue 12 item 14 (error-codes.md): a failed turn records its coded line, not a bare code.

    A bare ``HZE020`` in ``hz heinzel show`` leaves the user to guess which server
    failed and how; the line names it, as a source failure's line does.
    """
    world = make_world(tmp_path)
    unreachable = {"OLLAMA_BASE_URL": "http://127.0.0.1:9/v1"}
    made = hz(
        world.home, "heinzel", "new", "--template", "digest",
        "--param", f"notes={world.notes}", "--param", "model=ollama:nothing",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert hz(world.home, "approve", "digest").returncode == 0
    woke = hz(world.home, "heinzel", "wake", "digest", **unreachable)
    assert woke.returncode == 1
    shown = json.loads(hz(world.home, "heinzel", "show", "digest", "--json").stdout)
    reason = shown["turns"][-1]["reason"]
    assert reason.startswith("HZE020: think: ") and len(reason) > len("HZE020: think: "), reason
    assert reason in hz(world.home, "heinzel", "show", "digest").stdout


#: What may never reach a terminal raw from the user's own words in an error: controls, and
#: the bidi overrides, isolates and zero-width characters that would hide or reorder text.
RAW_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize(
    ("args", "code", "escaped"),
    [
        (("heinzel", "rename", "notes-digest", "\u202eevil"), "HZU041", "\\u202eevil"),
        (("heinzel", "show", "na\u202eme\u200b"), "HZU", "na\\u202eme\\u200b"),
        (("heinzel", "list", "--where", "ke\u2066y"), "HZU022", "ke\\u2066y"),
        (("heinzel", "rename", "\x1b[2Jold", "new-name"), "HZU", "\\u001b[2Jold"),
        (("heinzel", "list", "--bogus\u202e"), "HZU000", "--bogus\\u202e"),
    ],
    ids=["rename-new-name", "unknown-ref", "where-key", "escape-in-ref", "unknown-flag"],
)
def test_s6_item2_user_words_echoed_in_an_error_are_shown_escaped(
    shared: World, args: tuple[str, ...], code: str, escaped: str
) -> None:
    """s6 item 2: a name, ref, key or flag echoed in an error line shows its control, bidi and
    format characters as ``\\uXXXX`` escapes (U+202E never reverses the rest of the line)."""
    result = hz(shared.home, *args)
    line = _one_coded_line(result, code)
    assert escaped in line
    assert not RAW_UNSAFE.search(result.stderr), result.stderr


def test_a_sentence_longer_than_a_file_name_is_a_sentence(tmp_path: Path) -> None:
    """Attack pass: ``hz heinzel new`` with a 294-character sentence ended in HZX001 (the
    check for a contract file met ENAMETOOLONG); it is a sentence like any other."""
    home = tmp_path / "home"
    home.mkdir()
    sentence = "a digest of my notes folder every morning please " * 6
    made = hz(home, "heinzel", "new", sentence.strip())
    assert made.returncode == 0, made.stderr
    assert "proposed digest" in made.stdout


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root``: its size and modification time."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
    }


def test_reads_of_an_empty_home_leave_it_empty(tmp_path: Path) -> None:
    """New-user pass (issue 13) finding 7: ``hz heinzel templates`` (and ``doctor``, ``heinzel
    list``, ``drafts``) made ``heinzel/index.sqlite`` in an empty home. A read answers and
    leaves nothing behind."""
    home = tmp_path / "home"
    home.mkdir()
    for command in (["heinzel", "templates"], ["doctor"], ["heinzel", "list"], ["drafts"],
                    ["heinzel", "verify"]):  # fmt: skip
        result = subprocess.run(
            [str(HZ), *command], env=hz_env(home), capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, (command, result.stderr)
        assert list(home.iterdir()) == [], command


def test_templates_touch_no_file_of_a_home_in_use(tmp_path: Path) -> None:
    """Finding 7: ``hz heinzel templates`` rewrote the default home's index; it needs no
    kernel, so no file of the home changes."""
    world = make_world(tmp_path)
    made = world.hz("heinzel", "new", "--template", "digest", "--param", "name=digest",
                    "--param", "notes=notes", "--param", "document=reports/d.md")  # fmt: skip
    assert made.returncode == 0 and (world.home / "heinzel" / "index.sqlite").exists()
    before = _tree(world.home)
    listed = world.hz("heinzel", "templates")
    assert "digest" in listed.stdout
    assert _tree(world.home) == before
