"""Contracts in versions and the heinzel lifecycle, through the kernel and the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hz_kernel.contracts import ContractError, ContractVersions, render_template
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import LessonRecorded

WEEKLY = render_template("weekly-report", {"name": "weekly"})


def _widen_cap(text: str, cap: str) -> str:
    lines = [f"    max_usd: {cap}" if "max_usd:" in line else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


async def _approved(kernel: Kernel, text: str = WEEKLY) -> str:
    made = await kernel.new(text=text)
    decided = await kernel.approve(ref=made.name)
    assert decided.version == 1 and decided.state == "asleep"
    return made.id


async def test_new_is_proposed_until_approved_then_v1_asleep(kernel: Kernel, home: Home) -> None:
    made = await kernel.new(template="weekly-report", params={"name": "weekly"})
    assert made.state == "proposed"
    assert ContractVersions(home.heinzel_dir(made.id)).all() == []
    (row,) = (await kernel.list_heinzels()).items
    assert row.state == "proposed" and row.contract_version is None
    await kernel.approve(ref="weekly")
    (row,) = (await kernel.list_heinzels()).items
    assert row.state == "asleep" and row.contract_version == 1
    assert ContractVersions(home.heinzel_dir(made.id)).all() == [1]
    assert row.assets and row.assets[0].startswith("doc:")


async def test_names_are_unique_per_namespace(kernel: Kernel) -> None:
    await kernel.new(text=WEEKLY)
    with pytest.raises(HzError) as caught:
        await kernel.new(text=WEEKLY)
    assert caught.value.code == "HZU030"


async def test_widening_from_the_heinzel_is_refused_the_same_text_from_the_user_accepted(
    kernel: Kernel, home: Home
) -> None:
    heinzel_id = await _approved(kernel)
    wider = _widen_cap(WEEKLY, "5.0")
    with pytest.raises(ContractError) as caught:
        await kernel.amend(ref="weekly", text=wider, by="heinzel")
    assert caught.value.code == "HZC050"
    proposed = await kernel.amend(ref="weekly", text=wider, by="user")
    assert proposed.widens
    decided = await kernel.approve(ref="weekly")
    assert decided.version == 2
    versions = ContractVersions(home.heinzel_dir(heinzel_id))
    assert versions.all() == [1, 2]
    assert versions.read(1)[1].fingerprint != versions.read(2)[1].fingerprint
    (row,) = (await kernel.list_heinzels()).items
    assert row.contract_version == 2


async def test_narrowing_from_the_heinzel_is_accepted(kernel: Kernel) -> None:
    await _approved(kernel)
    narrower = _widen_cap(WEEKLY, "0.1")
    proposed = await kernel.amend(ref="weekly", text=narrower, by="heinzel")
    assert proposed.narrows and not proposed.widens
    assert (await kernel.approve(ref="weekly")).version == 2


async def test_a_declined_source_is_not_proposed_again(kernel: Kernel) -> None:
    await _approved(kernel)
    narrower = _widen_cap(WEEKLY, "0.1")
    await kernel.amend(ref="weekly", text=narrower, by="heinzel")
    decided = await kernel.reject(ref="weekly")
    assert decided.declined
    detail = await kernel.show("weekly")
    assert [a.status for a in detail.amendments] == ["declined"]


async def test_lessons_never_enter_the_contract(kernel: Kernel, home: Home) -> None:
    heinzel_id = await _approved(kernel)
    versions = ContractVersions(home.heinzel_dir(heinzel_id))
    before = versions.read(1)
    await kernel.append(heinzel_id, LessonRecorded(lesson_id="L1", lesson="risks go first"))
    assert versions.read(1) == before and versions.all() == [1]
    assert "risks go first" not in versions.text_path(1).read_text()


async def test_pause_retire_and_back(kernel: Kernel) -> None:
    await _approved(kernel)
    assert (await kernel.pause(ref="weekly")).state == "paused"
    with pytest.raises(HzError):
        await kernel.pause(ref="weekly")
    assert (await kernel.unpause(ref="weekly")).state == "asleep"
    assert (await kernel.retire(ref="weekly")).state == "retired"
    assert (await kernel.unretire(ref="weekly")).state == "asleep"
    await kernel.rename(ref="weekly", name="weekly-checkout")
    assert (await kernel.show("weekly-checkout")).heinzel.name == "weekly-checkout"


async def test_import_is_idempotent(kernel: Kernel, tmp_path: Path) -> None:
    folder = tmp_path / "contracts"
    folder.mkdir()
    for name in ("weekly-report", "changelog", "digest"):
        (folder / f"{name}.prose.md").write_text(render_template(name, {}))
    first = await kernel.import_dir(path=str(folder))
    assert len(first.created) == 3 and not first.conflicts
    second = await kernel.import_dir(path=str(folder))
    assert second.created == [] and sorted(second.unchanged) == sorted(first.created)
    states = {h.state for h in (await kernel.list_heinzels()).items}
    assert states == {"asleep"}


_AUDITED_LIST = """
import sys
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith("session.jsonl"):
        opened.append(args[0])
    if event == "os.open" and str(args[0]).endswith("session.jsonl"):
        opened.append(str(args[0]))
sys.addaudithook(hook)
from hz_kernel.cli import main
code = main(["heinzel", "list", "--json"] + sys.argv[1:])
sys.stderr.write(f"SPINES-OPENED {len(opened)}\\n")
sys.exit(code)
"""


@pytest.mark.timeout(900)
async def test_filtering_500_answers_from_the_index_without_opening_a_spine(home: Home) -> None:
    """Five hundred real heinzels (1250 durable writes): a loaded machine takes minutes."""
    kernel = await Kernel.open(home)
    for n in range(500):
        document = "reports/weekly.md" if n % 50 == 0 else f"digests/n{n}.md"
        params = {"name": f"digest-{n:03d}", "document": document, "section": f"s{n}"}
        text = render_template("digest", params)
        made = await kernel.new(text=text)
        if n % 2 == 0:
            await kernel.approve(ref=made.id)
    await kernel.close()
    env = {**os.environ, "HZ_HOME": str(home.root)}

    def listing(*args: str) -> tuple[list[dict[str, object]], str]:
        result = subprocess.run(
            [sys.executable, "-c", _AUDITED_LIST, *args],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout), result.stderr

    rows, stderr = listing("--artifact", "doc:reports/weekly.md#s50")
    assert [r["name"] for r in rows] == ["digest-050"] and "SPINES-OPENED 0" in stderr
    rows, stderr = listing("--state", "proposed")
    assert len(rows) == 250 and "SPINES-OPENED 0" in stderr
    rows, stderr = listing("--contract", "digest-004:1")
    assert [r["name"] for r in rows] == ["digest-004"] and "SPINES-OPENED 0" in stderr
    rows, stderr = listing("--where", "render_on_schedule=if-moved", "--state", "asleep")
    assert len(rows) == 250 and "SPINES-OPENED 0" in stderr


async def test_the_contract_view_shows_versions_diffs_and_what_waits(kernel: Kernel) -> None:
    made = await kernel.new(text=WEEKLY)
    view = await kernel.contract(ref="weekly")
    assert view.versions == [] and view.text is None and view.pending is not None
    assert view.pending.first and view.pending.text == WEEKLY and view.pending.diff is None
    await kernel.approve(ref=made.id)
    view = await kernel.contract(ref="weekly")
    assert view.versions == [1] and view.text == WEEKLY and view.diff is None
    assert view.pending is None
    narrower = _widen_cap(WEEKLY, "0.25")
    await kernel.amend(ref="weekly", text=narrower, by="heinzel", reason="quieter weeks")
    pending = (await kernel.contract(ref="weekly")).pending
    assert pending is not None and not pending.first and pending.by == "heinzel"
    assert pending.reason == "quieter weeks" and not pending.widens
    assert pending.diff and "+    max_usd: 0.25" in pending.diff
    await kernel.approve(ref="weekly")
    await kernel.amend(ref="weekly", text=_widen_cap(WEEKLY, "9.00"), by="user")
    await kernel.approve(ref="weekly")
    view = await kernel.contract(ref="weekly")
    assert view.versions == [1, 2, 3] and view.version == 3 and view.against == 2
    assert view.diff and "-    max_usd: 0.25" in view.diff and "+    max_usd: 9.00" in view.diff
    assert view.pending is None
    old = await kernel.contract(ref="weekly", version=1, against=None)
    assert old.text == WEEKLY and old.diff is None
    with pytest.raises(HzError) as missing:
        await kernel.contract(ref="weekly", version=7)
    assert missing.value.code == "HZC082"
