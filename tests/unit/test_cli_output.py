"""What the commands print: ``emit_rows`` (a listing's JSON, without pydantic's serializer)
prints what ``emit_json`` prints for the same rows' ``model_dump``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hz_kernel.cli.output import emit_json, emit_rows
from hz_kernel.overview import HeinzelFailure, HeinzelSummary, TeamView

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def _rows() -> list[HeinzelSummary]:
    failure = HeinzelFailure(
        code="HZF010", message="the source \x1b[31mfailed", since=T0, at=T0, failures=2,
        retry_at=datetime(2026, 11, 27, 9, 4, 0, 500_000, tzinfo=UTC),
    )  # fmt: skip
    team = TeamView(repo="/srv/git/team.git", role="delegate", holder="theo", token=3)
    busy = HeinzelSummary(
        id="hz-01JBCDEFGHJKMNPQRSTVWXYZ01", name="wöchentlich", namespace="me", state="asleep",
        assets=["doc:reports/weekly.md#checkout"], cost_today=0.1 + 0.2, lessons_active=2,
        failure=failure, queued="capacity", team=team,
    )  # fmt: skip
    return [busy, HeinzelSummary(id="hz-02", name="plain", namespace="me", state="proposed")]


def test_rows_print_as_their_model_dump(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows()
    emit_json([row.model_dump(mode="json") for row in rows])
    dumped = capsys.readouterr().out
    emit_rows(rows)
    assert capsys.readouterr().out == dumped
    assert '"retry_at": "2026-11-27T09:04:00.500000Z"' in dumped
