"""Amendments: a heinzel may narrow its contract, never widen it; the user may do both."""

from __future__ import annotations

from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo

import pytest
from contract_samples import WEEKLY

from hz_kernel.contracts import (
    CompiledContract,
    ContractError,
    check_amendment,
    compare_schedules,
    compile_contract,
)

CURRENT = compile_contract(WEEKLY, source="v1")


def amended(old: str, new: str) -> CompiledContract:
    assert WEEKLY.count(old) == 1, old
    return compile_contract(WEEKLY.replace(old, new), source="v2")


WIDENING = {
    "requires gains a capability": (
        ("documents:write]", "documents:write, http:read]"),
        "requires: adds http:read",
    ),
    "inputs gains an input": (
        (
            "  requires:",
            "    drafts: {source: files, method: glob, args: {pattern: '*.md'}}\n  requires:",
        ),
        'inputs: adds "drafts"',
    ),
    "an input's args change": (
        ("repo: /srv/checkout", "repo: /srv/all"),
        'inputs: changes "merged_prs" (args)',
    ),
    "an input's method changes": (
        ("method: merged_pull_requests", "method: commits"),
        'inputs: changes "merged_prs" (method)',
    ),
    "an input's facet changes": (
        ("      recheck: 1h\n", "      recheck: 1h\n      facet: titles\n"),
        'inputs: changes "merged_prs" (facet)',
    ),
    "an input is rechecked more often": (
        ("recheck: 1h", "recheck: 15m"),
        'inputs: rechecks "merged_prs" more often (1h → 15m)',
    ),
    "publishes gains a target": (
        (
            '      asset: "doc:reports/weekly.md#checkout"\n',
            '      asset: "doc:reports/weekly.md#checkout"\n'
            "    - {capability: documents.place_draft, asset: 'doc:wiki/home.md'}\n",
        ),
        "publishes: adds doc:wiki/home.md (documents.place_draft)",
    ),
    "max_usd rises": (("max_usd: 0.5", "max_usd: 0.75"), "agent.max_usd: rises 0.5 → 0.75"),
    "max_tokens rises (issue 12 item 8)": (
        ("max_usd: 0.5", "max_usd: 0.5\n    max_tokens: 200000"),
        "agent.max_tokens: rises 100000 → 200000",
    ),
    "model changes": (
        ("model: local", "model: 'ollama:llama3'"),
        "agent.model: changes local → ollama:llama3",
    ),
    "approvers gain someone": (
        ("[owner]", "[owner, theo]"),
        "approvers: changes owner → owner, theo",
    ),
    "approvers lose someone": (("[owner]", "[theo]"), "approvers: changes owner → theo"),
    "schedule fires more often": (
        ('"0 15 * * FRI"', '"0 15 * * MON,FRI"'),
        "schedule: fires when it did not before (0 15 * * FRI → 0 15 * * MON,FRI: it fires on "
        "days the old one did not, like January 1 when it is a Monday)",
    ),
    "schedule fires earlier": (
        ('"0 15 * * FRI"', '"0 9 * * FRI"'),
        "schedule: fires when it did not before (0 15 * * FRI → 0 9 * * FRI: "
        "it adds hour 9 of the day)",
    ),
    "schedule moves to an earlier day": (
        ('"0 15 * * FRI"', '"0 15 * * TUE"'),
        "schedule: fires when it did not before (0 15 * * FRI → 0 15 * * TUE: it fires on "
        "days the old one did not, like January 1 when it is a Tuesday)",
    ),
    "schedule moves later": (
        ('"0 15 * * FRI"', '"30 16 * * FRI"'),
        "schedule: fires when it did not before (0 15 * * FRI → 30 16 * * FRI: "
        "it adds minute 30 of the hour)",
    ),
    "schedule fires hourly in fewer months (issue 12)": (
        ('"0 15 * * FRI"', '"0 * * FEB-DEC *"'),
        "schedule: fires when it did not before (0 15 * * FRI → 0 * * FEB-DEC *: "
        "it adds hours 0, 1, 2, 3, ... of the day)",
    ),
    "render on every slot": (
        ("render_on_schedule: if-moved", "render_on_schedule: always"),
        "render_on_schedule: if-moved → always",
    ),
    "an output goes stale sooner": (
        ("valid_for: 7d", "valid_for: 1d"),
        'outputs: "section" goes stale after 1d (was 7d)',
    ),
}


def test_a_schedule_appearing_is_widening() -> None:
    without = amended('  schedule: "0 15 * * FRI"\n', "")
    check = check_amendment(without, CURRENT, by="user")
    assert check.widens == ("schedule: adds 0 15 * * FRI",)
    with pytest.raises(ContractError) as caught:
        check_amendment(without, CURRENT, by="heinzel")
    assert caught.value.code == "HZC050"


@pytest.mark.parametrize("label", sorted(WIDENING))
def test_a_widening_amendment_is_refused_from_the_heinzel_and_accepted_from_the_user(
    label: str,
) -> None:
    (old, new), expected = WIDENING[label]
    proposed = amended(old, new)

    with pytest.raises(ContractError) as caught:
        check_amendment(CURRENT, proposed, by="heinzel")
    assert caught.value.code == "HZC050"
    assert caught.value.place == "weekly-report"

    check = check_amendment(CURRENT, proposed, by="user")
    assert check.widening and check.changed
    assert expected in check.widens
    assert expected in caught.value.message


def test_the_priya_amendment_adding_incidents_needs_the_user() -> None:
    proposed = amended(
        "  requires: [git:read, files:read, documents:write]",
        "    incidents:\n      source: shell\n      method: run\n"
        "      args: {command: oncall-export --channel checkout}\n"
        "  requires: [git:read, files:read, documents:write, shell:run]",
    )
    with pytest.raises(ContractError) as caught:
        check_amendment(CURRENT, proposed, by="heinzel")
    assert 'inputs: adds "incidents"' in caught.value.message
    assert "requires: adds shell:run" in caught.value.message

    check = check_amendment(CURRENT, proposed, by="user")
    assert check.widens == ("requires: adds shell:run", 'inputs: adds "incidents"')
    assert check.narrows == ()


NARROWING = {
    "an input removed": (
        "    notes:\n      source: files\n      method: glob\n      args:\n"
        '        pattern: "**/*.md"\n        root: notes\n',
        "",
        'inputs: drops "notes"',
    ),
    "a lower cap": ("max_usd: 0.5", "max_usd: 0.25", "agent.max_usd: lowers 0.5 → 0.25"),
    "a lower token cap (issue 12 item 8)": (
        "max_usd: 0.5",
        "max_usd: 0.5\n    max_tokens: 20000",
        "agent.max_tokens: lowers 100000 → 20000",
    ),
    "a rarer schedule": (
        '"0 15 * * FRI"',
        '"0 15 * 1-6 FRI"',
        "schedule: fires only at some of its times (0 15 * * FRI → 0 15 * 1-6 FRI)",
    ),
    "the first friday only": (
        '"0 15 * * FRI"',
        '"0 15 * * FRI#1"',
        "schedule: fires only at some of its times (0 15 * * FRI → 0 15 * * FRI#1)",
    ),
    "no schedule": ('  schedule: "0 15 * * FRI"\n', "", "schedule: drops 0 15 * * FRI"),
    "a publish target removed": (
        "  publishes:\n    - capability: documents.place_draft\n"
        '      asset: "doc:reports/weekly.md#checkout"\n',
        "",
        "publishes: drops doc:reports/weekly.md#checkout (documents.place_draft)",
    ),
    "rechecked less often": (
        "recheck: 1h",
        "recheck: 6h",
        'inputs: rechecks "merged_prs" less often (1h → 6h)',
    ),
}


@pytest.mark.parametrize("label", sorted(NARROWING))
def test_narrowing_is_accepted_from_the_heinzel(label: str) -> None:
    old, new, expected = NARROWING[label]
    check = check_amendment(CURRENT, amended(old, new), by="heinzel")
    assert not check.widening
    assert expected in check.narrows


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("documents:write]", "documents:write, chat:read]", "requires: drops chat:read"),
        ("if-moved", "always", "render_on_schedule: always → if-moved"),
        ("valid_for: 7d", "valid_for: 1d", 'outputs: "section" goes stale after 7d (was 1d)'),
    ],
)
def test_undoing_a_widening_is_narrowing(old: str, new: str, expected: str) -> None:
    check = check_amendment(amended(old, new), CURRENT, by="heinzel")
    assert check.narrows == (expected,)


def test_body_changes_are_neutral_and_fine_from_the_heinzel() -> None:
    proposed = compile_contract(
        WEEKLY.replace("then risks.", "then risks, then next steps.").replace(
            "description: This week's", "description: The weekly"
        )
        + "\n### Continuity\n\nKeep the owner's headings.\n",
        source="v2",
    )
    check = check_amendment(CURRENT, proposed, by="heinzel")

    assert check.widens == () and check.narrows == ()
    assert check.neutral == (
        "body: adds ### Continuity",
        "body: changes ### Maintains",
        "description: changes",
    )


def test_an_unchanged_contract_reports_nothing() -> None:
    check = check_amendment(CURRENT, CURRENT, by="heinzel")
    assert (check.widens, check.narrows, check.neutral, check.changed) == ((), (), (), False)


def test_an_equivalent_schedule_spelling_is_no_change() -> None:
    check = check_amendment(CURRENT, amended('"0 15 * * FRI"', '"0 15 * * 5"'), by="heinzel")
    assert check.widens == () and check.narrows == ()


@pytest.mark.parametrize("by", ["heinzel", "user"])
def test_name_and_namespace_cannot_change_in_an_amendment(by: str) -> None:
    for old, new in (
        ("name: weekly-report", "name: weekly-checkout"),
        ("name: weekly-report", "name: weekly-report\nnamespace: team"),
    ):
        with pytest.raises(ContractError) as caught:
            check_amendment(CURRENT, amended(old, new), by=by)  # type: ignore[arg-type]
        assert caught.value.code == "HZC051"


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        ("0 9 * * *", "0 9 * * MON-FRI", "narrows"),
        ("0 9 * * MON-FRI", "0 9 * * *", "widens"),
        ("0 9 * * *", "*/30 * * * *", "widens"),
        ("* * * * *", "* * * * *", "same"),
        ("0 9 1 * *", "0 9 15 * *", "widens"),
        ("0 9 * * MON", "0 9 * * 1", "same"),
        ("0 9 * * SUN", "0 9 * * 7", "same"),
        ("0 9 * * MON", "0 8 * * MON", "widens"),
        ("0 0 29 2 *", "0 9 * * *", "widens"),
        ("0 9 * * *", "0 9 * 7 *", "narrows"),
        ("0 15 * * FRI", "0 * * FEB-DEC *", "widens"),
        ("0 0 1,15 * *", "0 0 1 * *", "narrows"),
        ("0 0 1 * MON", "0 0 1 * *", "narrows"),
        ("0 0 1 * *", "0 0 1 * MON", "widens"),
        ("0 0 * * MON", "0 0 */7 * MON", "narrows"),
        ("0 0 * * MON", "0 0 1,8 * MON", "widens"),
        ("0 0 L * *", "0 0 LW * *", "widens"),
        ("0 0 28-31 * *", "0 0 L * *", "narrows"),
        ("0 0 * * 5L", "0 0 * * 5#5", "narrows"),
        ("0 0 * * 5#5", "0 0 * * 5L", "widens"),
        ("0 0 31 FEB,MAR *", "0 0 31 MAR *", "same"),
        ("0-59 * * * *", "* * * * *", "same"),
        ("0-59 0-23 * * *", "* * * * *", "same"),
    ],
)
def test_schedules_compare_exactly_by_their_slots(old: str, new: str, verdict: str) -> None:
    """issue 12 item 13: narrowing means every new slot is an old one, decided over the fields."""
    assert compare_schedules(old, new, zone=UTC).verdict == verdict


@pytest.mark.parametrize("zone", [None, ZoneInfo("Europe/Berlin")])
def test_a_change_in_how_dst_nights_fire_is_never_narrowing_outside_utc(
    zone: tzinfo | None,
) -> None:
    """issue 12 item 13: the time zone is handled, so a DST night can't add a slot."""
    assert compare_schedules("* * * * *", "0 9 * * *", zone=UTC).verdict == "narrows"
    change = compare_schedules("* * * * *", "0 9 * * *", zone=zone)
    assert change.verdict == "widens" and "daylight-saving" in change.why
    assert compare_schedules("0-59 0-23 * * *", "* * * * *", zone=zone).verdict == "widens"
    assert compare_schedules("0 9 * * *", "0 9 * * MON", zone=zone).verdict == "narrows"
