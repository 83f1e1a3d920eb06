"""The document source reading sections of real Markdown files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sources_helpers import NOW

from hz_kernel.adapters.sources import DocumentSource, FetchResult, SourceRequest
from hz_kernel.errors import HzError

REPORT = """\
# Weekly report

Intro line.

## Release notes

- shipped search
- fixed a typo

### Details

Nested text stays in the section.

```sh
# not a heading
```

## Risks

None this week.
"""


def section(base_dir: Path, path: str, anchor: str | None = None) -> FetchResult:
    args = {"path": path} if anchor is None else {"path": path, "anchor": anchor}
    request = SourceRequest(source="document", method="section", args=args)
    return DocumentSource(base_dir=base_dir).fetch(request, now=NOW, previous=None)


def test_the_whole_file_without_an_anchor(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text(REPORT)
    result = section(tmp_path, "report.md")
    assert result.content == {"section": REPORT}
    assert result.facets == {"section": hashlib.sha256(REPORT.encode()).hexdigest()}


@pytest.mark.parametrize(
    "anchor", ["Release notes", "release-notes", "#release-notes", "RELEASE NOTES"]
)
def test_a_section_by_heading_text_or_slug(tmp_path: Path, anchor: str) -> None:
    (tmp_path / "report.md").write_text(REPORT)
    text = section(tmp_path, "report.md", anchor).content["section"]
    assert text.startswith("- shipped search")
    assert "Nested text stays in the section." in text
    assert "# not a heading" in text
    assert "Risks" not in text and "Intro" not in text


def test_edits_outside_the_section_leave_its_fingerprint(tmp_path: Path) -> None:
    document = tmp_path / "report.md"
    document.write_text(REPORT)
    before = section(tmp_path, "report.md", "Release notes")
    document.write_text(REPORT.replace("None this week.", "One risk.").replace("Intro", "Hi"))
    assert section(tmp_path, "report.md", "Release notes").facets == before.facets
    document.write_text(REPORT.replace("fixed a typo", "fixed two typos"))
    assert section(tmp_path, "report.md", "Release notes").facets != before.facets


def test_the_last_section_runs_to_the_end(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text(REPORT)
    assert section(tmp_path, str(tmp_path / "report.md"), "Risks").content == {
        "section": "None this week."
    }


@pytest.mark.parametrize(
    ("name", "data", "anchor", "code"),
    [
        ("absent.md", None, None, "HZT060"),
        ("dir.md", "directory", None, "HZT060"),
        ("report.md", REPORT.encode(), "Nowhere", "HZT061"),
        ("report.md", REPORT.encode(), "not a heading", "HZT061"),
        ("latin.md", "caf\xe9".encode("latin-1"), None, "HZT062"),
    ],
)
def test_failures_have_codes(
    tmp_path: Path, name: str, data: bytes | str | None, anchor: str | None, code: str
) -> None:
    if data == "directory":
        (tmp_path / name).mkdir()
    elif isinstance(data, bytes):
        (tmp_path / name).write_bytes(data)
    with pytest.raises(HzError) as caught:
        section(tmp_path, name, anchor)
    assert caught.value.code == code
    assert caught.value.place == str(tmp_path / name)
