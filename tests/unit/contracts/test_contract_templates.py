"""Shipped templates and the offline sentence-to-contract path."""

from __future__ import annotations

import pytest

from hz_kernel.contracts import (
    ContractError,
    choose_template,
    compile_contract,
    contract_from_sentence,
    list_templates,
    render_template,
    schedule_from_sentence,
)
from hz_kernel.errors import UsageError

TEMPLATES = ("changelog", "digest", "weekly-report")


def test_the_three_templates_are_listed_with_descriptions_and_parameters() -> None:
    infos = {info.name: info for info in list_templates()}

    assert set(TEMPLATES) <= set(infos)
    for info in infos.values():
        assert info.description and "\n" not in info.description
        names = {param.name for param in info.parameters}
        assert {"name", "document", "goal", "schedule"} <= names
        assert all(param.help for param in info.parameters)


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_template_renders_and_compiles_with_its_defaults(name: str) -> None:
    compiled = compile_contract(render_template(name, {}), source=name)

    assert compiled.name == name
    assert compiled.goal
    assert compiled.assets
    assert "{" not in compiled.model_dump_json().replace('{"', "").replace("{}", "")


def test_weekly_report_is_friday_at_three_if_moved_from_prs_and_notes() -> None:
    compiled = compile_contract(
        render_template(
            "weekly-report",
            {
                "repo": "/srv/checkout",
                "notes": "team/notes",
                "document": "reports/weekly.md",
                "section": "checkout",
                "name": "checkout-weekly",
            },
        ),
        source="t",
    )
    assert compiled.name == "checkout-weekly"
    assert compiled.schedule == "0 15 * * FRI"
    assert compiled.hz.render_on_schedule == "if-moved"
    assert compiled.inputs["merged_prs"].method == "merged_pull_requests"
    assert compiled.inputs["merged_prs"].args["repo"] == "/srv/checkout"
    assert compiled.inputs["notes"].args["root"] == "team/notes"
    assert compiled.assets == ("doc:reports/weekly.md#checkout",)


def test_changelog_is_source_driven_and_digest_is_daily() -> None:
    changelog = compile_contract(render_template("changelog", {}), source="t")
    assert changelog.schedule is None
    assert changelog.inputs["commits"].source == "git"
    assert "branch" not in changelog.inputs["commits"].args

    on_main = compile_contract(render_template("changelog", {"branch": "main"}), source="t")
    assert on_main.inputs["commits"].args["branch"] == "main"

    digest = compile_contract(render_template("digest", {}), source="t")
    assert digest.schedule == "0 9 * * *"
    assert digest.inputs["notes"].args["pattern"] == "**/*.md"


@pytest.mark.parametrize("name", ["🚀-rocket-日報", "👩\u200d👩\u200d👧-family", "گزارش-هفتگی"])
def test_values_beyond_ascii_reach_the_contract_whole(name: str) -> None:
    """A document named with an emoji (beyond the BMP) compiles, and the contract names it
    exactly: no lone surrogate halves (they crashed the daemon's heinzel.new)."""
    document = f"/docs/{name}.md"
    compiled = compile_contract(render_template("digest", {"document": document}), source="t")

    assert any(document in asset for asset in compiled.assets)
    assert compiled.model_dump_json().encode("utf-8")


def test_a_value_with_half_a_surrogate_pair_is_refused() -> None:
    with pytest.raises(ContractError) as refused:
        render_template("digest", {"document": "/docs/\udcf0.md"})

    assert refused.value.code == "HZC091"


def test_values_cannot_inject_yaml_or_sections() -> None:
    nasty = 'repo: "x", approvers: [mallory] # \\ \' ok'
    compiled = compile_contract(
        render_template("weekly-report", {"repo": nasty, "goal": "### Done when <!-- hide"}),
        source="t",
    )
    assert compiled.inputs["merged_prs"].args["repo"] == nasty
    assert compiled.hz.approvers == ("owner",)
    assert compiled.goal == "\\### Done when &lt;!-- hide"
    assert compiled.body.section("Done when") is not None


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"colour": "blue"}, "HZC091"),
        ({"repo": "two\nlines"}, "HZC091"),
        ({"repo": ""}, "HZC091"),
        ({"repo": "x" * 1001}, "HZC091"),
        ({"name": "Not A Slug"}, "HZC060"),
        ({"schedule": "whenever"}, "HZC020"),
        ({"document": "../outside.md"}, "HZC040"),
    ],
)
def test_bad_parameters_are_contract_errors(params: dict[str, str], code: str) -> None:
    with pytest.raises(ContractError) as caught:
        render_template("weekly-report", params)
    assert caught.value.code == code


def test_an_unknown_template_is_an_error() -> None:
    for name in ("nope", "../model", ""):
        with pytest.raises(ContractError) as caught:
            render_template(name, {})
        assert caught.value.code == "HZC090"


@pytest.mark.parametrize(
    ("sentence", "template"),
    [
        (
            "every Friday at three, draft this week's section of our weekly report from merged PRs",
            "weekly-report",
        ),
        ("keep CHANGELOG.md up to date from the git history, on each new commit", "changelog"),
        ("write release notes for every commit", "changelog"),
        ("a daily digest of the markdown files in docs/", "digest"),
        ("summarise my notes every morning", "digest"),
        ("status report of merged pull requests every monday", "weekly-report"),
    ],
)
def test_the_template_is_chosen_by_keywords(sentence: str, template: str) -> None:
    assert choose_template(sentence) == template


@pytest.mark.parametrize("sentence", ["write me a poem", "something I can't describe"])
def test_a_sentence_no_template_fits_is_refused_never_made_a_digest(sentence: str) -> None:
    """issue 12 item 14: no keyword, no guess; the refusal lists every template hz can make."""
    with pytest.raises(UsageError) as caught:
        contract_from_sentence(sentence, {})
    assert caught.value.code == "HZU100"
    assert all(name in caught.value.message for name in ("changelog", "digest", "weekly-report"))


SCHEDULES = [
    ("every Friday at three", "0 15 * * FRI"),
    ("every friday at 3pm", "0 15 * * FRI"),
    ("every Friday at 3 p.m.", "0 15 * * FRI"),
    ("every friday at 15:00", "0 15 * * FRI"),
    ("daily at 9", "0 9 * * *"),
    ("daily at 9am", "0 9 * * *"),
    ("every day at 7", "0 7 * * *"),
    ("every weekday at 8:30", "30 8 * * MON-FRI"),
    ("on workdays at 8.30", "30 8 * * MON-FRI"),
    ("monday to friday at noon", "0 12 * * MON-FRI"),
    ("every monday", "0 9 * * MON"),
    ("on Mondays and Thursdays at half past two", "30 14 * * MON,THU"),
    ("every Tuesday at quarter past ten", "15 10 * * TUE"),
    ("at three thirty every wednesday", "30 15 * * WED"),
    ("on weekends at 10am", "0 10 * * SAT,SUN"),
    ("every morning", "0 9 * * *"),
    ("every evening", "0 18 * * *"),
    ("nightly", "0 21 * * *"),
    ("at midnight", "0 0 * * *"),
    ("at 12am every day", "0 0 * * *"),
    ("at 12pm every day", "0 12 * * *"),
    ("every hour", "0 * * * *"),
    ("hourly on weekdays", "0 * * * MON-FRI"),
    ("every 15 minutes", "*/15 * * * *"),
    ("every half hour", "*/30 * * * *"),
    ("every 2 hours", "0 */2 * * *"),
    ("monthly", "0 9 1 * *"),
    ("every month on the 15th at 10:00", "0 10 15 * *"),
    ("weekly", "0 9 * * MON"),
    ("once a week at 4pm", "0 16 * * MON"),
    ("at 9:45", "45 9 * * *"),
    ("every 90 minutes at 25:99", None),
    ("at 13 every day", "0 13 * * *"),
    ("every 45 hours", None),
]


@pytest.mark.parametrize(("phrase", "cron"), SCHEDULES)
def test_phrases_map_to_sensible_schedules(phrase: str, cron: str | None) -> None:
    guess = schedule_from_sentence(f"Keep the digest current, {phrase}.")
    assert guess.cron == cron
    assert compile_contract(render_template("digest", {"schedule": cron or ""}), source="t")


def test_weekly_keeps_the_templates_own_day_and_time() -> None:
    assert schedule_from_sentence("the weekly report", "0 15 * * FRI").cron == "0 15 * * FRI"
    assert schedule_from_sentence("the weekly report at 10am", "0 15 * * FRI").cron == (
        "0 10 * * FRI"
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "keep the changelog from git history, on each new commit",
        "update the digest whenever a note changes",
        "redo the report as soon as a PR is merged",
    ],
)
def test_source_driven_phrases_mean_no_schedule(sentence: str) -> None:
    guess = schedule_from_sentence(sentence)
    assert guess.cron is None and guess.source_driven
    assert compile_contract(contract_from_sentence(sentence, {}), source="s").schedule is None


def test_a_sentence_without_timing_keeps_the_template_default() -> None:
    text = contract_from_sentence("a digest of my notes", {})
    assert compile_contract(text, source="s").schedule == "0 9 * * *"


def test_the_brief_example_becomes_a_weekly_report_contract() -> None:
    sentence = (
        "every Friday at three, draft this week's section of our weekly report from merged PRs"
    )
    compiled = compile_contract(
        contract_from_sentence(sentence, {"repo": "/srv/checkout", "notes": "notes", "bogus": "x"}),
        source="s",
    )
    assert compiled.name == "weekly-report"
    assert compiled.schedule == "0 15 * * FRI"
    assert compiled.hz.render_on_schedule == "if-moved"
    assert compiled.goal == sentence
    assert compiled.inputs["merged_prs"].args["repo"] == "/srv/checkout"


def test_explicit_params_win_over_the_sentence() -> None:
    text = contract_from_sentence(
        "daily digest at 9", {"schedule": "0 7 * * MON", "name": "morning-digest"}
    )
    compiled = compile_contract(text, source="s")
    assert (compiled.name, compiled.schedule) == ("morning-digest", "0 7 * * MON")


@pytest.mark.parametrize(
    "sentence",
    [
        "every Friday at three, draft the weekly report",
        "changelog every day at noon",
        "digest at 9pm on weekends",
        "every 15 minutes check the notes",
        "### Goal: a digest",
        "a digest <!-- of everything",
        "résumé des notes chaque lundi 📝",
        "a digest every 99 minutes and every 77 hours",
        "the digest on the 31st at 25:99",
    ],
)
def test_many_sentences_give_contracts_that_compile(sentence: str) -> None:
    assert compile_contract(contract_from_sentence(sentence, {}), source="s").goal


def test_an_empty_or_huge_sentence_is_an_error() -> None:
    for sentence in ("", "   \n ", "x" * 1001):
        with pytest.raises(ContractError) as caught:
            contract_from_sentence(sentence, {})
        assert caught.value.code == "HZC092"
