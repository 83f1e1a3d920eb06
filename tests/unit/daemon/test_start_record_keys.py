"""Issue 15 item 2: a daemon restarted from its start record finds its keys where it found
them: a key file's path is kept by value (it is not a secret), a key only by name."""

from __future__ import annotations

import pytest

from hz_kernel.daemon.startenv import StartRecord


def test_issue15_item2_the_start_record_keeps_key_file_paths_and_base_urls_never_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY_FILE", "/home/priya/.config/hz/openai.key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    record = StartRecord.of_this_process()
    assert record.env["OPENAI_API_KEY_FILE"] == "/home/priya/.config/hz/openai.key"
    assert record.env["ANTHROPIC_BASE_URL"] == "http://proxy.test"
    assert "ANTHROPIC_API_KEY" in record.secrets
    assert "sk-ant-secret-value" not in record.model_dump_json()
    env, missing = record.environment({"PATH": "/usr/bin"})
    assert env["OPENAI_API_KEY_FILE"] == "/home/priya/.config/hz/openai.key"
    assert missing == ["ANTHROPIC_API_KEY"]
