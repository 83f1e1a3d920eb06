"""Compiling contracts: the typed result, or one coded error on the right line per mistake."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from contract_samples import WEEKLY, with_hz

from hz_kernel.contracts import (
    CompiledContract,
    ContractError,
    compile_contract,
    read_contract_file,
)
from hz_kernel.errors import HzError


def compile_error(text: str) -> ContractError:
    with pytest.raises(ContractError) as caught:
        compile_contract(text, source="weekly.prose.md")
    return caught.value


def test_compiles_the_weekly_report_into_typed_parts() -> None:
    compiled = compile_contract(WEEKLY, source="weekly.prose.md")

    assert compiled.name == "weekly-report"
    assert compiled.namespace == "me"
    assert compiled.schedule == "0 15 * * FRI"
    assert compiled.hz.render_on_schedule == "if-moved"
    assert compiled.assets == ("doc:reports/weekly.md#checkout",)
    assert set(compiled.inputs) == {"merged_prs", "notes"}
    prs = compiled.inputs["merged_prs"]
    assert (prs.source, prs.method, prs.recheck) == ("git", "merged_pull_requests", "1h")
    assert prs.args == {"repo": "/srv/checkout", "window": "7d"}
    assert compiled.hz.requires == ("documents:write", "files:read", "git:read")
    assert compiled.hz.outputs["section"].valid_for == "7d"
    assert compiled.hz.agent.max_usd == 0.5
    assert compiled.goal.startswith("Draft this week's Checkout section")
    assert [s.title for s in compiled.body.sections] == ["Goal", "Maintains", "Done when"]
    assert compiled.body.preamble == "# Weekly report"
    assert len(compiled.fingerprint) == 64


def test_compiled_form_round_trips_through_json() -> None:
    compiled = compile_contract(WEEKLY, source="weekly.prose.md")
    dumped = compiled.model_dump_json()

    assert CompiledContract.model_validate_json(dumped) == compiled
    assert json.loads(dumped)["fingerprint"] == compiled.fingerprint


def test_defaults_fill_what_a_minimal_contract_leaves_out() -> None:
    compiled = compile_contract(with_hz("  {}\n"), source="min")

    assert compiled.schedule is None
    assert compiled.hz.render_on_schedule == "always"
    assert compiled.hz.approvers == ("owner",)
    assert compiled.hz.agent.model is None, "unset: the home's [model] default at turn time"
    assert compiled.inputs == {}


def test_values_are_normalised() -> None:
    text = with_hz(
        '  schedule: "0   9 * *  mon-fri"\n'
        "  requires: [shell:run, http:read, shell:run]\n"
        "  approvers: ['@priya', owner]\n"
        "  inputs:\n"
        "    status:\n"
        "      source: shell\n"
        "      method: run\n"
        "      args: {command: 'git status', timeout: 1m}\n"
        "      recheck: 90m\n"
        "    page:\n"
        "      source: http\n"
        "      method: get\n"
        "      args: {url: 'https://example.org/status'}\n"
        "      recheck: 1w\n"
        "  publishes:\n"
        "    - {capability: documents.place_draft, asset: 'doc:./out//status.md#today'}\n"
        "  agent: {model: 'anthropic:claude-sonnet-4-5', max_usd: 2}\n"
    ).replace("[shell:run, http:read, shell:run]", "[shell:run, http:read, documents:write]")
    compiled = compile_contract(text, source="norm")

    assert compiled.schedule == "0 9 * * MON-FRI"
    assert compiled.hz.requires == ("documents:write", "http:read", "shell:run")
    assert compiled.hz.approvers == ("owner", "priya")
    assert compiled.inputs["status"].args == {"command": "git status", "timeout": 60.0}
    assert compiled.inputs["status"].recheck == "90m"
    assert compiled.inputs["page"].recheck == "7d"
    assert compiled.assets == ("doc:out/status.md#today",)
    assert compiled.hz.agent.max_usd == 2.0


def test_every_source_and_method_compiles() -> None:
    text = with_hz(
        "  requires: [files:read, git:read, shell:run, http:read, documents:read, heinzels:read]\n"
        "  inputs:\n"
        "    a: {source: files, method: glob, args: {pattern: '*.md'}}\n"
        "    b: {source: git, method: commits, args: {repo: ., branch: main, limit: 50}}\n"
        "    c: {source: git, method: merged_pull_requests, args: {repo: ., window: 14d}}\n"
        "    d: {source: shell, method: run, args: {command: date, cwd: /tmp, timeout: 5}}\n"
        "    e: {source: http, method: get, args: {url: 'http://localhost:8080/x'}}\n"
        "    f: {source: document, method: section, args: {path: plan.md, anchor: Risks}}\n"
        "    g: {source: heinzel, method: approved_output, args: {heinzel: other, output: "
        "section}, facet: summary}\n"
    )
    compiled = compile_contract(text, source="all")

    assert {spec.source for spec in compiled.inputs.values()} == {
        "files",
        "git",
        "shell",
        "http",
        "document",
        "heinzel",
    }
    assert compiled.inputs["g"].facet == "summary"


def test_documents_write_grants_reading_documents() -> None:
    text = with_hz(
        "  requires: [documents:write]\n"
        "  inputs:\n"
        "    plan: {source: document, method: section, args: {path: plan.md}}\n"
    )
    assert compile_contract(text, source="x").inputs["plan"].source == "document"


def test_crlf_bom_and_comments_compile_like_plain_text() -> None:
    messy = "\ufeff" + WEEKLY.replace("\n", "\r\n").replace(
        "### Goal", "<!-- authoring note\nspanning lines -->\n### Goal"
    )
    assert compile_contract(messy, source="x") == compile_contract(WEEKLY, source="x")


def test_headings_inside_code_fences_are_not_sections() -> None:
    body = "### Goal\n\nKeep it.\n\n```\n### Done when\n```\n"
    compiled = compile_contract(with_hz("  {}\n", body=body), source="x")

    assert [s.title for s in compiled.body.sections] == ["Goal"]
    assert "### Done when" in compiled.goal


def test_unknown_sections_are_kept_and_known_titles_are_canonical() -> None:
    body = "### goal\nKeep it.\n### Notes for later\nSomething.\n### DONE WHEN\nDone.\n"
    compiled = compile_contract(with_hz("  {}\n", body=body), source="x")

    assert [s.title for s in compiled.body.sections] == ["Goal", "Notes for later", "Done when"]
    assert compiled.body.section("notes for later") == "Something."


def test_unknown_top_level_keys_are_ignored_unless_they_look_like_a_typo() -> None:
    compiled = compile_contract(
        WEEKLY.replace("description:", "kind: contract\ndescription:"), source="x"
    )
    assert compiled.name == "weekly-report"


def replace_once(old: str, new: str) -> str:
    assert WEEKLY.count(old) == 1, old
    return WEEKLY.replace(old, new)


ERROR_CASES = [
    ("no frontmatter", WEEKLY.removeprefix("---\n"), "HZC001", 1),
    ("unclosed frontmatter", replace_once("---\n# Weekly", "# Weekly"), "HZC001", 1),
    ("yaml syntax", replace_once("window: 7d", "window: [7d"), "HZC002", 14),
    ("unquoted star cron", replace_once('"0 15 * * FRI"', "* * * * *"), "HZC002", 5),
    ("too large", WEEKLY + "x" * (256 * 1024), "HZC003", 1),
    ("nul byte", replace_once("notes\n", "no\x00tes\n"), "HZC004", 20),
    ("lone surrogate", replace_once("# Weekly", "# \ud800"), "HZC004", 33),
    ("anchor", replace_once("approvers: [owner]", "approvers: &who [owner]"), "HZC005", 28),
    ("frontmatter not a table", "---\n- a\n- b\n---\n### Goal\nx\n", "HZC006", 2),
    ("no hz", replace_once("hz:\n", "hx:\n"), "HZC010", 1),
    ("empty hz", "---\nname: sample\nhz:\n---\n### Goal\nx\n", "HZC010", 3),
    ("unknown hz key", replace_once("  approvers:", "  approver:"), "HZC011", 28),
    ("unknown input key", replace_once("      recheck: 1h", "      rechek: 1h"), "HZC011", 14),
    ("unknown arg", replace_once("        window: 7d", "        windw: 7d"), "HZC011", 13),
    ("top-level typo", replace_once("description:", "descripton:"), "HZC011", 3),
    ("wrong type", replace_once("max_usd: 0.5", "max_usd: cheap"), "HZC012", 31),
    ("bool as text", replace_once("root: notes", "root: yes"), "HZC012", 20),
    ("custom tag", replace_once("approvers: [owner]", "approvers: !!set {owner}"), "HZC012", 28),
    ("missing source", replace_once("      source: files\n", ""), "HZC013", 15),
    ("missing arg", replace_once("        repo: /srv/checkout\n", ""), "HZC013", 11),
    (
        "duplicate key",
        replace_once("  approvers: [owner]", "  approvers: [owner]\n  approvers: [x]"),
        "HZC014",
        29,
    ),
    ("render mode", replace_once("if-moved", "sometimes"), "HZC015", 6),
    ("no approvers", replace_once("[owner]", "[]"), "HZC017", 28),
    ("bad cron", replace_once('"0 15 * * FRI"', '"0 25 * * FRI"'), "HZC020", 5),
    ("six fields", replace_once('"0 15 * * FRI"', '"0 0 15 * * FRI"'), "HZC020", 5),
    ("bad duration", replace_once("recheck: 1h", "recheck: hourly"), "HZC021", 14),
    ("sub-minute window", replace_once("window: 7d", "window: 30s"), "HZC021", 13),
    ("unknown source", replace_once("source: git", "source: gitlab"), "HZC030", 9),
    ("unknown method", replace_once("method: glob", "method: find"), "HZC031", 17),
    (
        "bad url",
        with_hz(
            "  requires: [http:read]\n  inputs:\n    p: {source: http, method: get, "
            "args: {url: 'ftp://x'}}\n"
        ),
        "HZC032",
        6,
    ),
    ("unknown capability", replace_once("files:read,", "files:read, fs:write,"), "HZC033", 21),
    ("capability not granted", replace_once("git:read, ", ""), "HZC034", 9),
    ("publish not granted", replace_once(", documents:write]", "]"), "HZC034", 23),
    (
        "reads itself",
        with_hz(
            "  requires: [heinzels:read]\n  inputs:\n    me: {source: heinzel, "
            "method: approved_output, args: {heinzel: sample, output: x}}\n"
        ),
        "HZC035",
        6,
    ),
    (
        "bad asset",
        replace_once("doc:reports/weekly.md#checkout", "reports/weekly.md"),
        "HZC040",
        24,
    ),
    ("asset escapes", replace_once("doc:reports/weekly.md", "doc:../weekly.md"), "HZC040", 24),
    ("bad anchor", replace_once("#checkout", "#Check Out"), "HZC040", 24),
    (
        "unknown publish capability",
        replace_once("documents.place_draft", "documents.delete"),
        "HZC041",
        23,
    ),
    (
        "published twice",
        replace_once(
            '      asset: "doc:reports/weekly.md#checkout"\n',
            '      asset: "doc:reports/weekly.md#checkout"\n'
            '    - {capability: documents.place_draft, asset: "doc:reports//weekly.md#checkout"}\n',
        ),
        "HZC042",
        25,
    ),
    ("no goal", replace_once("### Goal", "### Aim"), "HZC045", 33),
    (
        "empty goal",
        with_hz("  {}\n", body="### Goal\n<!-- todo -->\n### Done when\nx\n"),
        "HZC045",
        6,
    ),
    ("duplicate section", WEEKLY + "\n### goal\nagain\n", "HZC046", 47),
    ("bad name", replace_once("name: weekly-report", "name: Weekly Report"), "HZC060", 2),
    ("missing name", replace_once("name: weekly-report\n", ""), "HZC061", 1),
    (
        "bad namespace",
        replace_once("name: weekly-report", "name: weekly-report\nnamespace: org"),
        "HZC062",
        3,
    ),
    ("bad input name", replace_once("    notes:", "    Notes:"), "HZC063", 15),
    ("bad model", replace_once("model: local", "model: gpt-4"), "HZC070", 30),
    ("negative cap", replace_once("max_usd: 0.5", "max_usd: -1"), "HZC071", 31),
    ("nan cap", replace_once("max_usd: 0.5", "max_usd: .nan"), "HZC071", 31),
    (
        "token cap too small (issue 12 item 8)",
        replace_once("max_usd: 0.5", "max_usd: 0.5\n    max_tokens: 10"),
        "HZC012",
        32,
    ),
]


@pytest.mark.parametrize(
    ("label", "text", "code", "line"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES]
)
def test_each_mistake_has_its_code_and_line(label: str, text: str, code: str, line: int) -> None:
    error = compile_error(text)

    assert (error.code, error.place) == (code, f"weekly.prose.md:{line}"), error.one_line()
    assert isinstance(error, HzError)
    assert error.message and "\n" not in error.one_line()


def test_the_first_problem_in_the_file_is_reported() -> None:
    text = replace_once('"0 15 * * FRI"', '"0 25 * * FRI"').replace("max_usd: 0.5", "max_usd: x")
    assert compile_error(text).place == "weekly.prose.md:5"


def test_a_typo_gets_a_suggestion() -> None:
    error = compile_error(replace_once("  schedule:", "  sechdule:"))
    assert "did you mean schedule?" in error.message


def test_deep_nesting_and_alias_bombs_are_refused_quickly() -> None:
    deep = with_hz("  x: " + "[" * 5000 + "]" * 5000 + "\n")
    assert compile_error(deep).code == "HZC005"
    bomb = "---\nname: sample\nhz:\n  a: &a [x, x, x, x, x, x, x, x, x]\n"
    bomb += "".join(
        f"  {k}: &{k} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, k in zip("abcdefgh", "bcdefghi", strict=True)
    )
    assert compile_error(bomb + "---\n### Goal\nx\n").code == "HZC005"


def test_pathological_lines_do_not_backtrack() -> None:
    """Each of these took minutes with a backtracking pattern; now they return at once."""
    spaces = WEEKLY + "### a" + " " * 200_000 + "x\n"
    assert compile_contract(spaces, source="x").body.section("a x") == ""
    url = with_hz(
        "  requires: [http:read]\n  inputs:\n    p: {source: http, method: get, args: "
        "{url: 'http://" + "a" * 60_000 + " '}}\n"
    )
    assert compile_error(url).code == "HZC032"


def test_huge_numbers_and_odd_scalars_are_errors() -> None:
    assert compile_error(replace_once("max_usd: 0.5", "max_usd: " + "9" * 5000)).code == "HZC012"
    assert compile_error(replace_once("max_usd: 0.5", "max_usd: 1.0e+400")).code == "HZC071"
    assert compile_error(replace_once("root: notes", "root: !!binary aGVsbG8=")).code == "HZC012"


def test_read_contract_file_reads_utf8_and_refuses_the_rest(tmp_path: Path) -> None:
    good = tmp_path / "weekly.prose.md"
    good.write_text(WEEKLY, encoding="utf-8")
    assert read_contract_file(good) == WEEKLY

    latin = tmp_path / "latin.prose.md"
    latin.write_bytes(b"---\nname: caf\xe9\n")
    assert read_contract_file_error(latin).code == "HZC004"

    big = tmp_path / "big.prose.md"
    big.write_bytes(b"x" * (256 * 1024 + 1))
    assert read_contract_file_error(big).code == "HZC003"

    link = tmp_path / "link.prose.md"
    os.symlink(good, link)
    assert read_contract_file_error(link).code == "HZC008"
    assert read_contract_file_error(tmp_path / "missing.prose.md").code == "HZC008"


def read_contract_file_error(path: Path) -> ContractError:
    with pytest.raises(ContractError) as caught:
        read_contract_file(path)
    return caught.value


@pytest.mark.parametrize(
    "branch", ["HEAD@{1}", "main@{yesterday}", "main..secret", "a//b", ".hidden", "x.lock", "@"]
)
def test_a_reflog_range_or_malformed_branch_is_refused_in_the_contract(branch: str) -> None:
    text = with_hz(
        "  requires: [git:read]\n"
        "  inputs:\n"
        f"    b: {{source: git, method: file, args: {{repo: ., path: a.md, branch: '{branch}'}}}}\n"
    )
    assert compile_error(text).code == "HZC032"


@pytest.mark.parametrize("branch", ["HEAD", "main", "release/2026.12", "v1.2.3", "feat/a-b"])
def test_an_ordinary_branch_or_tag_compiles(branch: str) -> None:
    text = with_hz(
        "  requires: [git:read]\n"
        "  inputs:\n"
        f"    b: {{source: git, method: file, args: {{repo: ., path: a.md, branch: '{branch}'}}}}\n"
    )
    assert compile_contract(text, source="t").inputs["b"].args["branch"] == branch
