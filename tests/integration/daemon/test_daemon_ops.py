"""issue 13 item 7 (operations you can see) and item 4 (restart drains, restarts as started).

Real daemons, the real ``hz`` binary; the only stand-in is a ``systemctl``
script on ``PATH`` (the service manager is not one of hz's components).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from hz_kernel.daemon.logs import RotatingLog
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from tests.integration.daemon.daemon_helpers import (
    HZ,
    Daemons,
    daemon_pids,
    discovery,
    hz,
    make_home,
    one_coded_line,
    pid_alive,
    ticks_pass,
)
from tests.integration.daemon.test_daemon_turns import _heinzel, _spine, _wait
from tests.support.homes import make_world

WAIT_S = 60


def _until(check: object, what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout}s: {what}")


def _writer(root: Path, max_bytes: int, keep: int) -> logging.Logger:
    """The daemon's own rotating handler, on a logger of the test's (the writer side)."""
    logger = logging.getLogger(f"test.rotation.{root.name}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = RotatingLog(root / "daemon.log", max_bytes, keep, carry_stdio=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    return logger


def _close(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)


# -- logs ------------------------------------------------------------------------------------


def test_issue13_item7_logs_n_reads_back_across_the_rotation_boundary(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    logger = _writer(home.root, max_bytes=2000, keep=3)
    try:
        for n in range(100):
            logger.info("line %04d %s", n, "x" * 40)
    finally:
        _close(logger)
    live = (home.root / "daemon.log").read_text().splitlines()
    assert 0 < len(live) < 60, "the live file alone must not hold the lines asked for"
    shown = hz(home.root, "daemon", "logs", "-n", "60")
    assert shown.returncode == 0, shown.stderr
    numbers = [int(line.split()[1]) for line in shown.stdout.splitlines()]
    assert numbers == list(range(40, 100))


def test_issue13_item7_logs_follow_survives_rotations(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    logger = _writer(home.root, max_bytes=1500, keep=2)
    logger.info("line 0000 before")
    out = tmp_path / "followed.txt"
    with open(out, "wb") as sink:
        env = {**os.environ, "HZ_HOME": str(home.root)}
        follower = subprocess.Popen(
            [*HZ, "daemon", "logs", "-n", "1", "-f"], stdout=sink, stderr=sink, env=env
        )
    try:
        _until(lambda: "line 0000" in out.read_text(), "the follower printed the tail")
        written = 0
        for _burst in range(5):
            # Each burst is one rotation's worth at most; the follower catches up in between.
            for _ in range(12):
                written += 1
                logger.info("line %04d %s", written, "y" * 60)
            last = f"line {written:04d}"
            _until(lambda last=last: last in out.read_text(), f"{last} followed")
        assert (home.root / "daemon.log.1").exists(), "the test must have rotated the log"
    finally:
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=10)
        _close(logger)
    numbers = [int(line.split()[1]) for line in out.read_text().splitlines() if line[:5] == "line "]
    assert numbers == list(range(0, written + 1)), "every line once, in order"


async def test_issue13_item7_the_daemon_log_rotates_and_keeps_the_last_files(
    tmp_path: Path, daemons: Daemons
) -> None:
    """A detached daemon logs to a rotating daemon.log (0600), keeps ``log_files`` older files,
    and its stdout/stderr follow the live file across rotations."""
    home = make_home(tmp_path / "home", heinzels=0,
                     daemon={"log_max_bytes": 1024, "log_files": 2})  # fmt: skip
    report = daemons.start(home)
    async with HttpClient(discovery(home)) as client:
        for _ in range(120):
            await client.drain(0, draining=False)  # one log line each
    names = sorted(p.name for p in home.root.iterdir() if p.name.startswith("daemon.log"))
    assert names == ["daemon.log", "daemon.log.1", "daemon.log.2"]
    for name in names:
        path = home.root / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.stat().st_size <= 1024 + 200
    stderr = os.readlink(f"/proc/{report['pid']}/fd/2")
    assert stderr == str(home.root / "daemon.log"), stderr
    assert hz(home.root, "daemon", "stop").returncode == 0


def test_issue13_item7_logs_without_a_log_is_a_coded_line(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    one_coded_line(hz(home.root, "daemon", "logs"), "HZD156")


# -- install ---------------------------------------------------------------------------------


def _stub_systemctl(bin_dir: Path, calls: Path, *, status: int = 0) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub = bin_dir / "systemctl"
    stub.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"with open({str(calls)!r}, 'a') as f: f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"sys.exit({status})\n"
    )
    stub.chmod(0o755)


def _calls(path: Path) -> list[list[str]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_issue13_item7_install_writes_and_enables_a_systemd_user_unit(tmp_path: Path) -> None:
    home = make_home(tmp_path / "my home", heinzels=0)
    calls = tmp_path / "calls.jsonl"
    _stub_systemctl(tmp_path / "bin", calls)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": str(tmp_path / "bin")}
    unit = tmp_path / "config" / "systemd" / "user" / "hz-daemon.service"

    dry = hz(home.root, "daemon", "install", "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert "Restart=on-failure" in dry.stdout and "would run: systemctl --user" in dry.stdout
    assert not unit.exists() and _calls(calls) == []

    done = hz(home.root, "daemon", "install", env=env)
    assert done.returncode == 0, done.stderr
    text = unit.read_text()
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_start == (
        f'ExecStart={sys.executable} -m hz_kernel.cli --home "{home.root}" '
        "daemon start --foreground"
    )
    assert f'Environment="HZ_HOME={home.root}"' in text
    assert "Restart=on-failure" in text and "WantedBy=default.target" in text
    assert _calls(calls) == [
        ["--user", "daemon-reload"],
        ["--user", "enable", "--now", "hz-daemon.service"],
    ]

    gone = hz(home.root, "daemon", "uninstall", env=env)
    assert gone.returncode == 0, gone.stderr
    assert not unit.exists()
    assert _calls(calls)[2:] == [
        ["--user", "disable", "--now", "hz-daemon.service"],
        ["--user", "daemon-reload"],
    ]


def test_fix13_install_dry_run_says_it_would_stop_the_detached_daemon_first(
    tmp_path: Path, daemons: Daemons
) -> None:
    """New-user pass (issue 13) finding 8: ``install --dry-run`` left out that install first
    stops the daemon running detached (the service manager runs it from then on)."""
    home = make_home(tmp_path / "home", heinzels=0)
    calls = tmp_path / "calls.jsonl"
    _stub_systemctl(tmp_path / "bin", calls)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": str(tmp_path / "bin")}
    running = daemons.start(home)
    dry = hz(home.root, "daemon", "install", "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith(
        f"# would stop daemon pid {running['pid']} first: systemd runs it from then on\n"
    )
    assert pid_alive(running["pid"]) and _calls(calls) == []


def test_issue13_item7_install_says_when_systemctl_is_missing_or_fails(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": str(tmp_path / "empty")}
    one_coded_line(hz(home.root, "daemon", "install", env=env), "HZD150")
    _stub_systemctl(tmp_path / "bin", tmp_path / "calls.jsonl", status=1)
    env["PATH"] = str(tmp_path / "bin")
    one_coded_line(hz(home.root, "daemon", "install", env=env), "HZD151")


def test_issue13_item7_install_for_launchd_keeps_it_alive_on_failure(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    dry = hz(home.root, "daemon", "install", "--manager", "launchd", "--dry-run",
             env={"HOME": str(tmp_path)})  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert f"would write {tmp_path}/Library/LaunchAgents/dev.hz.daemon.plist" in dry.stdout
    plist = dry.stdout.split("\n", 1)[1].split("# would run")[0]
    assert "<key>SuccessfulExit</key>\n    <false/>" in plist
    assert f"<string>{home.root}/daemon.log</string>" in plist
    assert "launchctl bootstrap gui/" in dry.stdout


# -- restart ---------------------------------------------------------------------------------


def _stub_systemd(bin_dir: Path, calls: Path, home: Path, started: Path) -> None:
    """A ``systemctl`` that does what systemd's restart does: SIGTERM the service's process,
    wait for it to go, and start the unit's command again (as its own session)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub = bin_dir / "systemctl"
    stub.write_text(
        f"#!{sys.executable}\n"
        "import json, os, signal, subprocess, sys, time\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"pid = json.load(open({str(home / 'daemon.json')!r}))['pid']\n"
        "os.kill(pid, signal.SIGTERM)\n"
        "def alive(p):\n"
        "    try: return open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
        "    except FileNotFoundError: return False\n"
        "while alive(pid): time.sleep(0.05)\n"
        "env = dict(os.environ, INVOCATION_ID='stub-2')\n"
        f"p = subprocess.Popen({[*HZ, '--home', str(home), 'daemon', 'start', '--foreground']!r},"
        " env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL, start_new_session=True)\n"
        f"open({str(started)!r}, 'w').write(str(p.pid))\n"
    )
    stub.chmod(0o755)


def test_issue13_item7_a_supervised_daemon_restarts_through_systemctl(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home", heinzels=1)
    env = {**os.environ, "HZ_HOME": str(home.root), "INVOCATION_ID": "stub-1"}
    with open(tmp_path / "journal.txt", "wb") as journal:
        first = subprocess.Popen(
            [*HZ, "daemon", "start", "--foreground"],
            env=env, stdin=subprocess.DEVNULL, stdout=journal, stderr=journal,
        )  # fmt: skip
    daemons.track(first.pid)
    try:
        _until(lambda: home.discovery_path.exists(), "the supervised daemon serves")
        served = discovery(home)
        assert (served.supervisor, served.pid) == ("systemd", first.pid)
        assert served.unit is not None and served.unit.endswith(".service")
        calls, started = tmp_path / "calls.jsonl", tmp_path / "started.pid"
        _stub_systemd(tmp_path / "bin", calls, home.root, started)
        path = f"{tmp_path / 'bin'}:{os.environ['PATH']}"
        restarted = hz(home.root, "daemon", "restart", "--json", env={"PATH": path})
        if started.exists():
            daemons.track(int(started.read_text()))
        assert restarted.returncode == 0, restarted.stderr
        report = json.loads(restarted.stdout)
        assert _calls(calls) == [["--user", "restart", served.unit]]
        assert report["supervisor"] == "systemd" and report["stopped"] == first.pid
        assert report["pid"] == int(started.read_text()) != first.pid
        assert first.wait(timeout=10) == 0
        assert b"serving" in (tmp_path / "journal.txt").read_bytes(), "under systemd: stderr"
        assert not (home.root / "daemon.log").exists()
        note = hz(home.root, "daemon", "logs")
        assert f"journalctl --user -u {served.unit}" in note.stderr
    finally:
        for pid in daemon_pids(home.root):
            daemons.track(pid)
        first.kill()
        first.wait()


async def test_issue13_item4_restart_drains_then_the_new_daemon_finishes_the_turn(
    tmp_path: Path, daemons: Daemons
) -> None:
    """A turn mid-think when the restart is asked reaches its step boundary, the daemon
    restarts with the environment it was started with, and the new one resumes the turn
    (think is not run again) and finishes it."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world, first_turn=True)
    # The model is held until the daemon drains: the restart (a fresh process) surely asks
    # while the turn is thinking, however slow the machine, and no longer than that.
    hold = tmp_path / "hold"
    hold.touch()
    started_env = {"HZ_MODEL_HOLD_FILE": str(hold), "HZ_TICK_SECONDS": "0.5"}
    home = Home.resolve(world.home)
    first = daemons.start(home, env=started_env)
    woke = hz(world.home, "heinzel", "wake", "notes-digest", env=started_env)
    assert woke.returncode == 0, woke.stderr
    spine = _wait(world, heinzel_id, "turn.started", count=2)
    turn = [e for e in spine if e["kind"] == "turn.started"][-1]["turn"]
    _until(
        lambda: any(e["kind"] == "step.done" and e["turn"] == turn
                    and e["data"]["step"] == "gather" for e in _spine(world, heinzel_id)),
        "the turn is thinking",
    )  # fmt: skip
    env = {**os.environ, "HZ_HOME": str(world.home)}  # no knobs in this environment
    restarting = subprocess.Popen(
        [*HZ, "daemon", "restart", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    try:
        async with HttpClient(discovery(home)) as client:
            deadline = time.monotonic() + WAIT_S
            while not (await client.health()).draining:
                assert time.monotonic() < deadline, "the restart never asked the daemon to drain"
                await asyncio.sleep(0.05)
        hold.unlink()  # think ends: the turn reaches its step boundary
        out, err = restarting.communicate(timeout=WAIT_S * 2)
    finally:
        restarting.kill()
        restarting.wait()
    assert restarting.returncode == 0, err
    report = json.loads(out)
    daemons.track(report["pid"])
    assert report["stopped"] == first["pid"] and report["paused"] == [turn]
    assert not pid_alive(first["pid"])
    # The new daemon may already have resumed the turn: look at what the first one wrote.
    mine = [e for e in _spine(world, heinzel_id) if e["turn"] == turn]
    kinds = [e["kind"] for e in mine]
    at_stop = mine[: kinds.index("turn.resumed")] if "turn.resumed" in kinds else mine
    assert [e["data"]["step"] for e in at_stop if e["kind"] == "step.done"] == ["gather", "think"]
    assert not any(e["kind"] == "turn.finished" for e in at_stop)
    environ = Path(f"/proc/{report['pid']}/environ").read_bytes().split(b"\0")
    assert f"HZ_MODEL_HOLD_FILE={hold}".encode() in environ
    assert b"HZ_TICK_SECONDS=0.5" in environ

    spine = _wait(world, heinzel_id, "turn.finished", count=2)
    mine = [e for e in spine if e["turn"] == turn]
    kinds = [e["kind"] for e in mine]
    assert kinds.count("turn.resumed") == 1 and kinds.count("turn.finished") == 1
    assert [e["data"]["step"] for e in mine if e["kind"] == "step.done"].count("think") == 1
    assert next(e for e in mine if e["kind"] == "turn.finished")["data"]["disposition"] == (
        "drafted"
    )
    resumed = next(e for e in mine if e["kind"] == "turn.resumed")
    assert resumed["data"]["woken_by"] == "restart"
    assert orjson.loads((world.home / "daemon.json").read_bytes())["pid"] == report["pid"]
    assert hz(world.home, "daemon", "stop").returncode == 0


async def test_fix13_restart_says_at_once_that_it_drains_and_counts_one_turn_right(
    tmp_path: Path, daemons: Daemons
) -> None:
    """New-user pass (issue 13) finding 5: ``hz daemon restart`` printed nothing while it
    drained (up to 30 s), then "1 turns … resumes them"; the log said "draining: 1 turns
    running". The first line comes before the drain ends, and one turn is one turn."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world, first_turn=True)
    hold = tmp_path / "hold"
    hold.touch()
    started_env = {"HZ_MODEL_HOLD_FILE": str(hold), "HZ_TICK_SECONDS": "0.5"}
    home = Home.resolve(world.home)
    daemons.start(home, env=started_env)
    assert hz(world.home, "heinzel", "wake", "notes-digest", env=started_env).returncode == 0
    turn = [e for e in _wait(world, heinzel_id, "turn.started", count=2)
            if e["kind"] == "turn.started"][-1]["turn"]  # fmt: skip
    _until(
        lambda: any(e["kind"] == "step.done" and e["turn"] == turn
                    and e["data"]["step"] == "gather" for e in _spine(world, heinzel_id)),
        "the turn is thinking",
    )  # fmt: skip
    restarting = subprocess.Popen(
        [*HZ, "daemon", "restart"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HZ_HOME": str(world.home)},
    )  # fmt: skip
    try:
        assert restarting.stdout is not None
        first = restarting.stdout.readline()  # the model is still held: the drain goes on
        async with HttpClient(discovery(home)) as client:
            deadline = time.monotonic() + WAIT_S
            while not (await client.health()).draining:  # else the turn may end unpaused
                assert time.monotonic() < deadline, "the restart never asked for a drain"
                await asyncio.sleep(0.05)
        hold.unlink()
        rest, err = restarting.communicate(timeout=WAIT_S * 2)
    finally:
        restarting.kill()
        restarting.wait()
    assert restarting.returncode == 0, err
    assert first == "draining: 1 turn running; waiting up to 60s for a step boundary…\n"
    assert "1 turn paused at a step boundary; the new daemon resumes it\n" in rest
    started = [line for line in rest.splitlines() if line.startswith("started daemon: pid ")]
    daemons.track(int(started[0].split()[3]))
    logged = (world.home / "daemon.log").read_text()
    assert "draining: 1 turn running" in logged and "1 turns" not in logged


async def test_issue13_item4_a_wake_while_draining_is_queued_and_the_next_daemon_runs_it(
    tmp_path: Path, daemons: Daemons
) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world, first_turn=True)
    home = Home.resolve(world.home)
    daemons.start(home, env={"HZ_TICK_SECONDS": "0.2"})
    async with HttpClient(discovery(home)) as client:
        drained = await client.drain(0)
    assert drained.paused == [] and drained.still_running == []
    woke = hz(world.home, "heinzel", "wake", "notes-digest", "--request-id", "w1", "--json")
    assert woke.returncode == 0, woke.stderr
    assert json.loads(woke.stdout)["status"] == "queued"
    await ticks_pass(home, 3)  # three ticks of the draining daemon: none may start the turn
    assert [e["kind"] for e in _spine(world, heinzel_id)].count("turn.started") == 1
    restarted = hz(world.home, "daemon", "restart", "--json")
    assert restarted.returncode == 0, restarted.stderr
    daemons.track(json.loads(restarted.stdout)["pid"])
    spine = _wait(world, heinzel_id, "turn.finished", count=2)
    started = [e for e in spine if e["kind"] == "turn.started"]
    assert len(started) == 2 and started[1]["data"]["request_ids"] == ["w1"]
    assert hz(world.home, "daemon", "stop").returncode == 0


def test_issue13_item4_restart_keeps_settings_and_names_a_missing_key_never_its_value(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    secret = "sk-test-not-a-real-key-0123456789"
    first = daemons.start(home, env={"OPENAI_API_KEY": secret, "HZ_TICK_SECONDS": "7"})
    record = home.root / "daemon.start.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    stored = json.loads(record.read_text())
    assert secret not in record.read_text() and stored["secrets"] == ["OPENAI_API_KEY"]
    assert stored["env"]["HZ_TICK_SECONDS"] == "7"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    restarted = subprocess.run(
        [*HZ, "daemon", "restart", "--json"], capture_output=True, text=True, timeout=120,
        env={**env, "HZ_HOME": str(home.root), "HZ_TICK_SECONDS": "99"},
    )  # fmt: skip
    assert restarted.returncode == 0, restarted.stderr
    report = json.loads(restarted.stdout)
    daemons.track(report["pid"])
    assert report["stopped"] == first["pid"] and report["tick_seconds"] == 7
    line = one_coded_line(restarted, "HZD152")
    assert "OPENAI_API_KEY" in line and secret not in line
    assert hz(home.root, "daemon", "stop").returncode == 0


async def test_issue13_item4_a_cockpit_does_not_reattach_to_a_daemon_on_its_way_out(
    tmp_path: Path, daemons: Daemons
) -> None:
    """Issue 13 item 4: the cockpit's link finds the daemon again with ``reattach``; a daemon
    that drains for a restart is about to exit, so it is not found (the link waits for the
    new one instead of attaching to the old and losing it again with a "not connected"
    toast); once the drain is taken back it is found again."""
    from hz_kernel.connect import reattach

    home = make_home(tmp_path / "home", heinzels=1)
    daemons.start(home)
    async with HttpClient(discovery(home)) as client:
        await client.drain(0)
        assert await reattach(home) is None
        await client.drain(0, draining=False)
    found = await reattach(home)
    assert found is not None
    await found.close()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_install_over_a_fifo_or_directory_never_hangs(tmp_path: Path, kind: str) -> None:
    """Hostile files: a FIFO where the unit file goes is read as no unit and replaced (never
    opened, which would block); a directory there is one coded line (HZS090), no traceback."""
    home = make_home(tmp_path / "home", heinzels=0)
    _stub_systemctl(tmp_path / "bin", tmp_path / "calls.jsonl")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": str(tmp_path / "bin")}
    unit = tmp_path / "config" / "systemd" / "user" / "hz-daemon.service"
    unit.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(unit)
    else:
        unit.mkdir()
    done = hz(home.root, "daemon", "install", env=env, timeout=30)
    if kind == "fifo":
        assert done.returncode == 0, done.stderr
        assert unit.is_file() and "ExecStart=" in unit.read_text()
        assert stat.S_IMODE(unit.stat().st_mode) == 0o600
    else:
        assert str(unit) in one_coded_line(done, "HZS090")
