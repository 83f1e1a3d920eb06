"""Issue 14 item 7: live output keeps following the end; only the user's scroll up stops it.

Over SSH the view's width and height change while output streams (a resize,
the page's scrollbar coming and going, the effect ledger appearing); each
shortens or lengthens the wrapped text under the view. None of that may
stop the follow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.kernel import Kernel
from hz_tui.app import CockpitApp
from hz_tui.widgets.stream_view import StreamView
from tests.tui import worlds
from tests.tui.test_cockpit import open_page, until


class OneStream(App[None]):
    CSS = "StreamView { height: 10; }"

    def compose(self) -> ComposeResult:
        yield StreamView(id="stream")


def at_end(stream: StreamView) -> bool:
    return stream.max_scroll_y > 0 and stream.scroll_y == stream.max_scroll_y


def words(n: int, start: int = 0) -> str:
    return "".join(
        f"line {i} of the stream, long enough to wrap at a narrow width\n"
        for i in range(start, start + n)
    )


async def test_follow_survives_resizes_and_batches_and_stops_only_for_the_user() -> None:
    app = OneStream()
    async with app.run_test(size=(100, 20)) as pilot:
        stream = app.query_one(StreamView)
        stream.reset("waiting")
        for n in range(0, 60, 3):
            stream.append(words(3, n))
        await pilot.pause()
        assert stream.following and at_end(stream)
        for width in (140, 60, 200, 80):
            # Wider: fewer wrapped lines, the position is clamped down as by a scroll up.
            await pilot.resize_terminal(width, 20)
            await pilot.pause()
            stream.append(words(2, 1000 + width))
            await pilot.pause()
            assert stream.following and at_end(stream), width
        stream.focus()
        await pilot.press("up")
        assert not stream.following
        kept = stream.scroll_y
        stream.append(words(5, 2000))
        await pilot.pause()
        assert not stream.following and stream.scroll_y == kept
        await pilot.resize_terminal(100, 20)
        await pilot.pause()
        assert not stream.following
        await pilot.press("end")
        await pilot.pause()
        assert stream.following
        stream.append(words(5, 3000))
        await pilot.pause()
        assert at_end(stream)
        stream.reset("next turn")
        await pilot.pause()
        assert stream.following


async def test_a_live_turn_is_followed_while_the_terminal_resizes(
    tmp_path: Path, pinned_clock: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real turn streams into the heinzel page while the window is resized (wider: the
    wrapped output gets shorter); after each resize and at the turn's end the view is at the
    end of the output."""
    world = worlds.make_world(tmp_path)
    world.add_note("wednesday.md", "# Wednesday\n" + words(40))
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)
        monkeypatch.setenv("HZ_MODEL_DELAY_MS", "60")
        app = CockpitApp(world.home, client)
        async with app.run_test(size=(90, 40)) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, heinzel)
            panel = page.turn_panel
            stream = panel.stream
            await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
            for n, width in enumerate((200, 100, 240, 120)):
                await until(lambda n=n: stream.text.count("\n") > 12 + 4 * n)
                assert panel.live.status == "running"
                await pilot.resize_terminal(width, 40)
                await pilot.pause()
                assert stream.following and at_end(stream), width
            await until(lambda: panel.live.status == "finished")
            await pilot.pause(0.3)
            assert stream.following and at_end(stream)
    finally:
        await client.close()
