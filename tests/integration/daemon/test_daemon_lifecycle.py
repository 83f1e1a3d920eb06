"""Real daemons, started by the real CLI: detach, adopt, crash and take over, stop, refuse."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
from daemon_helpers import (
    HZ,
    Daemons,
    daemon_pids,
    discovery,
    hz,
    make_home,
    one_coded_line,
    pid_alive,
)

from hz_kernel import operations as ops
from hz_kernel.connect import connect
from hz_kernel.daemon import lifecycle
from hz_kernel.daemon.discovery import KernelLock
from hz_kernel.errors import HzError
from hz_kernel.http_client import HttpClient
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_launcher_exits_and_the_daemon_keeps_serving(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home")
    launcher = subprocess.run(
        [*HZ, "daemon", "start", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "HZ_HOME": str(home.root)},
        timeout=60,
    )
    assert launcher.returncode == 0, launcher.stderr
    report = json.loads(launcher.stdout)
    daemons.track(report["pid"])
    assert report["running"] and not report["adopted"] and report["heinzels"] == 3
    # The launcher is gone; the daemon lives on in a session of its own.
    assert pid_alive(report["pid"]) and os.getsid(report["pid"]) == report["pid"]
    found = discovery(home)
    assert found.pid == report["pid"] and found.address.startswith("http://127.0.0.1:")
    assert _mode(home.discovery_path) == 0o600 and _mode(home.root / "daemon.log") == 0o600
    client = await connect(home)
    try:
        assert isinstance(client, HttpClient)
        listed = await client.call(ops.LIST, ops.ListRequest())
        assert sorted(h.name for h in listed.items) == ["h0", "h1", "h2"]
    finally:
        await client.close()
    shown = hz(home.root, "heinzel", "show", "h1", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["heinzel"]["name"] == "h1"
    again = daemons.start(home)
    assert again["adopted"] and again["pid"] == report["pid"]


async def test_sigkill_then_start_takes_over_and_nothing_is_lost(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home")
    first = daemons.start(home)
    first_token = discovery(home).token
    async with HttpClient(discovery(home)) as client:
        await client.call(ops.PAUSE, ops.HeinzelRef(ref="h0"))
        await client.call(ops.PAUSE, ops.HeinzelRef(ref="h2"))
    os.kill(first["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pid_alive(first["pid"]) and time.monotonic() < deadline:
        time.sleep(0.02)

    status = hz(home.root, "daemon", "status")
    assert status.returncode == 1
    assert str(first["pid"]) in one_coded_line(status, "HZD041")
    connected = await connect(home)  # a stale file never blocks an embedded kernel
    await connected.close()
    assert not isinstance(connected, HttpClient)

    restarted = hz(home.root, "daemon", "start")
    assert restarted.returncode == 0, restarted.stderr
    assert f"stale daemon.json (pid {first['pid']} is gone)" in restarted.stdout
    second = discovery(home)
    daemons.track(second.pid)
    assert second.pid != first["pid"] and second.token != first_token
    async with HttpClient(second) as client:
        reports = (await client.call(ops.VERIFY, ops.VerifyRequest())).items
        assert {r.name: (r.ok, r.events) for r in reports} == {
            "h0": (True, 2),
            "h1": (True, 1),
            "h2": (True, 2),
        }
        listed = await client.call(ops.LIST, ops.ListRequest())
        assert {h.name: h.seq for h in listed.items} == {"h0": 2, "h1": 1, "h2": 2}
    for heinzel_id in home.heinzel_ids():
        assert scan_file(home.heinzel_dir(heinzel_id) / SPINE_NAME).intact


def test_two_racing_starters_leave_one_daemon(tmp_path: Path, daemons: Daemons) -> None:
    home = make_home(tmp_path / "home")
    env = {**os.environ, "HZ_HOME": str(home.root)}
    racers = [
        subprocess.Popen(
            [*HZ, "daemon", "start", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    reports = []
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        assert racer.returncode == 0, err
        reports.append(json.loads(out))
    for report in reports:
        daemons.track(report["pid"])
    assert reports[0]["pid"] == reports[1]["pid"]
    assert sorted(r["adopted"] for r in reports) == [False, True]
    assert daemon_pids(home.root) == [reports[0]["pid"]]


def test_stop_status_restart(tmp_path: Path, daemons: Daemons) -> None:
    home = make_home(tmp_path / "home", heinzels=1)
    first = daemons.start(home)
    status = hz(home.root, "daemon", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == first["pid"]

    restarted = hz(home.root, "daemon", "restart", "--json")
    assert restarted.returncode == 0, restarted.stderr
    second = json.loads(restarted.stdout)
    daemons.track(second["pid"])
    assert second["stopped"] == first["pid"] and second["pid"] != first["pid"]
    assert not pid_alive(first["pid"])

    stopped = hz(home.root, "daemon", "stop")
    assert stopped.returncode == 0 and f"stopped daemon pid {second['pid']}" in stopped.stdout
    assert not home.discovery_path.exists() and not KernelLock.is_held(home)
    status = hz(home.root, "daemon", "status")
    assert status.returncode == 1 and status.stdout == ""
    one_coded_line(status, "HZD041")
    not_running = hz(home.root, "daemon", "stop")
    assert not_running.returncode == 0 and "not running" in not_running.stdout


async def test_a_live_daemon_that_does_not_answer_is_unreachable_not_replaced(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home", heinzels=1)
    report = daemons.start(home)
    os.kill(report["pid"], signal.SIGSTOP)
    try:
        with pytest.raises(HzError) as refused:
            await connect(home, health_timeout=0.5)
        assert refused.value.code == "HZD040"
        # Session 11: the careless user is told which process is silent and what ends it.
        assert f"pid {report['pid']}" in refused.value.message
        assert "hz daemon stop" in refused.value.message
        assert discovery(home).pid == report["pid"] and KernelLock.is_held(home)
    finally:
        os.kill(report["pid"], signal.SIGCONT)
    assert daemon_pids(home.root) == [report["pid"]]


def test_an_embedded_kernel_holding_the_home_keeps_the_daemon_out(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    with KernelLock(home):
        result = hz(home.root, "daemon", "start")
    assert result.returncode == 1
    one_coded_line(result, "HZD002")
    assert not home.discovery_path.exists()


def test_a_non_loopback_host_is_refused_at_start(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", heinzels=0, daemon={"host": "0.0.0.0"})
    result = hz(home.root, "daemon", "start")
    assert result.returncode == 1
    one_coded_line(result, "HZD001")
    assert not home.discovery_path.exists() and daemon_pids(home.root) == []


async def test_unix_socket(tmp_path: Path, daemons: Daemons) -> None:
    home = make_home(tmp_path / "h", heinzels=2, daemon={"unix_socket": True})
    daemons.start(home)
    found = discovery(home)
    socket_path = home.root / "daemon.sock"
    assert found.address == f"unix:{socket_path}" and _mode(socket_path) == 0o600
    async with HttpClient(found) as client:
        assert (await client.health()).heinzels == 2
        listed = await client.call(ops.LIST, ops.ListRequest())
        assert len(listed.items) == 2
    listed_by_cli = hz(home.root, "heinzel", "list", "--json")
    assert listed_by_cli.returncode == 0 and len(json.loads(listed_by_cli.stdout)) == 2


async def test_stopping_a_daemon_that_was_sigstopped_kills_it_and_leaves_no_stop_behind(
    tmp_path: Path, daemons: Daemons
) -> None:
    """Attack pass: a restart from the cockpit of a SIGSTOPped daemon failed (HZD004), and the
    stop it had queued ran once the daemon was continued, leaving no daemon at all. A stop
    that SIGTERM does not finish now ends in SIGKILL; the restart then starts the next one."""
    home = make_home(tmp_path / "home", heinzels=1)
    report = daemons.start(home)
    os.kill(report["pid"], signal.SIGSTOP)
    stopped = await lifecycle.stop(home, timeout=1.0)
    assert stopped.stopped == report["pid"]
    assert not pid_alive(report["pid"]) and not KernelLock.is_held(home)
    started = await lifecycle.start(home)
    daemons.track(started.pid)
    assert started.running and daemon_pids(home.root) == [started.pid]
