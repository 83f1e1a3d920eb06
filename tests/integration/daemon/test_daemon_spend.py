"""The ``costs.today`` operation: today's spending against the daily cap, on both heads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from daemon_helpers import Daemons, discovery, hz
from ulid import ULID

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import HeinzelCreated, TurnFinished, TurnStarted

NOW = "2026-11-20T12:00:00Z"
TODAY = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
YESTERDAY = datetime(2026, 11, 19, 9, 0, tzinfo=UTC)


def spend_home(root: Path) -> Home:
    """Two heinzels: 0.25 + 0.5 USD spent today, 4.0 yesterday; the cap is 2.5 a day."""
    root.mkdir(parents=True, mode=0o700)
    (root / "hz.toml").write_text("[heinzel]\nmax_usd_per_day = 2.5\n")
    for name, spent in (("a", [(TODAY, 0.25), (YESTERDAY, 4.0)]), ("b", [(TODAY, 0.5)])):
        with SpineWriter.open(root / "heinzel" / f"hz-{ULID()}") as writer:
            writer.append(HeinzelCreated(name=name), ts=YESTERDAY)
            for at, usd in spent:
                turn = str(ULID())
                writer.append(TurnStarted(cause="asked", contract_version=1), turn=turn, ts=at)
                writer.append(TurnFinished(disposition="nothing", usd=usd), turn=turn, ts=at)
    return Home.resolve(root)


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


async def test_issue14_item5_spend_today_against_the_cap_on_both_heads(
    tmp_path: Path, daemons: Daemons, pinned: None
) -> None:
    """issue 14 item 5: the home's totals get today's spend and the daily cap through the
    protocol (the remote cockpit reads no files); the embedded kernel and the daemon agree."""
    home = spend_home(tmp_path / "home")
    local = await LocalClient.open(home)
    try:
        embedded = await local.call(ops.SPEND, ops.Empty())
    finally:
        await local.close()
    assert embedded.model_dump() == {"day": "2026-11-20", "spent_usd": 0.75, "cap_usd": 2.5}
    daemons.start(home, env={"HZ_NOW": NOW})
    try:
        async with HttpClient(discovery(home)) as remote:
            over_http = await remote.call(ops.SPEND, ops.Empty())
    finally:
        stopped = hz(home.root, "daemon", "stop", "--json")
        assert stopped.returncode == 0, stopped.stderr
    assert over_http == embedded
    assert json.loads(over_http.model_dump_json())["cap_usd"] == 2.5
