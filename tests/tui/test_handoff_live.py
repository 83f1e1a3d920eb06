"""Issue 18 item 4: the cockpit shows a running handoff live, and its end.

A real long-lived kernel (as ``hz`` embeds it) runs a turn whose scripted
model hands a task to the scripted runner, which works until it is killed.
The heinzel page's live turn shows the call, the runner's output as it
streams, "handoff: running <runner> <elapsed>" on the step line and a
``handoff`` row in the effect ledger; stopping the turn ends the runner and
settles the row interrupted; a cockpit attached to a daemon shows the same
from the wire alone. The transcript of a finished handoff lists the
runner's output under its call.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from hz_kernel import operations as ops
from hz_kernel import remote
from hz_kernel.daemon.protocol import Discovery
from hz_kernel.kernel import Kernel
from hz_tui.app import CockpitApp
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.transcript import TranscriptModel
from hz_tui.widgets.effect_ledger import EffectLedger
from hz_tui.widgets.live_turn import WireTurnPanel
from hz_tui.widgets.step_line import StepLine
from hz_tui.widgets.stream_view import StreamView
from tests.support import handoff_runner
from tests.support.handoff import DRAFT, HANDOFF, configure, gone, handoff_contract, marked
from tests.support.openai_stub import OpenAIStub, ToolCall
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE, open_page, text_of, until
from tests.tui.test_remote import FileAudit, hz


async def test_the_live_turn_shows_a_running_handoff_and_a_stop_ends_it(tmp_path: Path) -> None:
    world = worlds.make_world(tmp_path)
    marks = configure(tmp_path / "home", "hang")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        async with embedded_client(world) as client:
            made = await client.kernel.new(text=handoff_contract(stub.spec()))
            await client.kernel.approve(ref=made.id)
            app = CockpitApp(world.home, client)
            async with app.run_test(size=SIZE) as pilot:
                await app.loaded.wait()
                page = await open_page(pilot, made.id)
                panel = page.turn_panel
                stream = panel.query_one(StreamView)
                await client.call(ops.WAKE, ops.WakeRequest(ref=made.id))
                await until(lambda: handoff_runner.WORK_LINE in stream.text)
                await until(lambda: panel.live.handoff is not None)
                assert "⚙ handoff(task=Rename the heading" in stream.text
                assert "handoff: running script" in text_of(panel.query_one(StepLine))
                ledger = panel.query_one(EffectLedger)
                assert [str(cell) for cell in ledger.get_row_at(0)][::2] == ["handoff", "started"]
                pids = marked(marks, lines=2)
                assert not gone(pids["started"][0], timeout_s=0)
                await pilot.press("K")
                await until(lambda: isinstance(app.screen, ConfirmScreen))
                asked = app.screen.query_one("#dialog-about", Static)
                assert "The coding agent it handed a task to is stopped too" in text_of(asked)
                await pilot.press("escape")
                await client.call(ops.STOP, ops.StopRequest(ref=made.id))
                await until(lambda: panel.live.status == "finished")
                await pilot.pause(0.2)
                assert panel.live.handoff is None
                assert "handoff: running" not in text_of(panel.query_one(StepLine))
                assert "  ⎿ script was stopped after " in stream.text
                row = [str(cell) for cell in ledger.get_row_at(0)][::2]
                assert row == ["handoff", "interrupted"]
                assert all(gone(pid, timeout_s=0.5) for pid in pids["started"] + pids["child"])


async def test_the_transcript_lists_the_runners_output_under_its_call(tmp_path: Path) -> None:
    world = worlds.make_world(tmp_path)
    configure(tmp_path / "home", "report")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        kernel = await Kernel.open(world.home)
        try:
            made = await kernel.new(text=handoff_contract(stub.spec()))
            await kernel.approve(ref=made.id)
            report = await kernel.wake(ref="fixer")
            answer = await kernel.turn_transcript(ref="fixer", turn=report.turn)
        finally:
            await kernel.close()
    model = TranscriptModel(heinzel=made.id)
    model.take(answer)
    lines = [line.text for line in model.lines()]
    start = lines.index("Tool calls")
    assert lines[start + 1].startswith("call 1 · handoff(task=Rename the heading")
    assert lines[start + 2] == "runner output:"
    output = model.block_text("tool0.runner")
    assert handoff_runner.WORK_LINE in output and handoff_runner.COST in output
    ended = next(n for n, line in enumerate(lines) if line.startswith("script exited 0 after "))
    assert start < ended < lines.index("Outcome")
    effects = lines[lines.index("Effects") :]
    assert any(line.startswith("handoff started · key ") for line in effects)
    assert any(line.startswith("script ended (status 0) after ") for line in effects)


async def test_a_remote_cockpit_follows_a_handoff_through_the_wire_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attached to a daemon (``hz --connect``), the page shows the runner's output, the step
    line's handoff and the stop's end from operations and the feed; no file of the home is
    read."""
    world = worlds.make_world(tmp_path / "world")
    marks = configure(world.home.root, "hang")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        contract = tmp_path / "fixer.prose.md"
        contract.write_text(handoff_contract(stub.spec()))
        assert hz(world, "heinzel", "new", str(contract)).returncode == 0
        assert hz(world, "approve", "fixer").returncode == 0
        started = hz(world, "daemon", "start")
        assert started.returncode == 0, started.stderr
        try:
            found = Discovery.model_validate_json(world.home.discovery_path.read_bytes())
            client = await remote.attach(found.address, found.token)
            host, port = remote.check_url(found.address)
            FileAudit.watch(world.home.root)
            app = CockpitApp(remote.connection_home(host, port), client)
            try:
                async with app.run_test(size=SIZE) as pilot:
                    await app.loaded.wait()
                    heinzel = next(iter(app.rows))
                    page = await open_page(pilot, heinzel)
                    panel = page.turn_panel
                    assert isinstance(panel, WireTurnPanel)
                    await client.call(ops.WAKE, ops.WakeRequest(ref="fixer"))
                    await until(lambda: handoff_runner.WORK_LINE in panel.stream.text)
                    await until(lambda: panel.live.handoff is not None)
                    assert "handoff: running script" in text_of(panel.query_one(StepLine))
                    await client.call(ops.STOP, ops.StopRequest(ref="fixer"))
                    await until(lambda: panel.live.status == "finished")
                    await until(lambda: "  ⎿ script was stopped after " in panel.stream.text)
            finally:
                touched = FileAudit.stop()
                await app.client.close()
        finally:
            hz(world, "daemon", "stop")
    assert touched == [], touched
    pids = marked(marks, lines=2)
    assert all(gone(pid, timeout_s=5) for pid in pids["started"] + pids["child"])
