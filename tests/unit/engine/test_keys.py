"""Every cause has its idempotency key, and the draft's effect key names version and occasion."""

from __future__ import annotations

from hz_kernel.engine.wakes import (
    draft_key,
    request_key,
    retry_key,
    schedule_key,
    source_key,
    stale_key,
)

HID = "hz-01JABCDEFGHJKMNPQRSTVWXYZ0"


def test_keys_per_cause() -> None:
    assert schedule_key(HID, "2026-10-30T15:00") == f"{HID}@2026-10-30T15:00"
    assert source_key(HID, "merged", "ab" * 32) == f"{HID}@merged:{'ab' * 32}"
    assert request_key(HID, "01JREQ") == f"{HID}@01JREQ"
    assert retry_key(HID, "01JTURN", "01JREQ") == f"{HID}@retry:01JTURN:01JREQ"
    assert stale_key(HID, "section", "2026-11-06T15:00") == f"{HID}@stale:section:2026-11-06T15:00"


def test_draft_key_names_version_occasion_and_asset() -> None:
    wake = schedule_key(HID, "2026-10-30T15:00")
    key = draft_key(HID, 1, wake, "doc:checkout/weekly-report")
    assert key == f"{HID}@v1@2026-10-30T15:00@doc:checkout/weekly-report"
    assert draft_key(HID, 2, request_key(HID, "R1"), "doc:a.md") == f"{HID}@v2@R1@doc:a.md"
