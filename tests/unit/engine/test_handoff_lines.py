"""What hz reads from a runner's output: its cost line, Claude Code's result line.

A report may itself end in JSON; only a line of exactly the cost fields is
taken off it, and a cost that is not a number of dollars is never guessed.
"""

from __future__ import annotations

import json

from hz_kernel.engine.tools.handoff import RunnerUsage, claude_result, cost_line


def test_only_a_last_line_of_cost_fields_is_taken_off_the_report() -> None:
    report, usage = cost_line('Done.\n{"usd": 0.12, "tokens": 3400}\n')
    assert report == "Done." and usage == RunnerUsage(usd=0.12, tokens=3400)
    for kept in ('Done.\n{"usd": 0.1, "model": "x"}', 'Done.\n{"ok": true}', "Done.\n{}"):
        assert cost_line(kept) == (kept, None)
    assert cost_line('{"tokens": 5}') == ("", RunnerUsage(tokens=5))


def _result(**fields: object) -> str:
    noise = json.dumps({"type": "assistant", "message": {"content": []}})
    return noise + "\n" + json.dumps({"type": "result", "result": "the report", **fields})


def test_claude_codes_result_line_gives_the_report_and_its_cost() -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 4}
    found = claude_result(_result(total_cost_usd=0.5, usage=usage))
    assert found == ("the report", RunnerUsage(usd=0.5, tokens=19, tokens_cached=4))
    assert claude_result(_result(total_cost_usd=True)) == ("the report", None)
    bad = {"input_tokens": "many", "output_tokens": -3, "cache_read_input_tokens": False}
    assert claude_result(_result(total_cost_usd=-1, usage=bad)) == ("the report", None)
    assert claude_result('{"type": "assistant"}\nnot json') is None
