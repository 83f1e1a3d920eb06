"""The real ``hz`` binary in a real terminal: tmux runs the cockpit against a running daemon.

A throwaway home holds one pending draft in a Markdown file. ``hz daemon
start`` starts the daemon for it; ``hz`` (the cockpit) attaches to it in a
120×40 tmux window. Keys open the review queue and approve the draft; the
result is read back from the document (its tag line is gone) and from the
screen (``tmux capture-pane``). tmux runs on a private socket, so no user
session is touched.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from hz_kernel.store.composer import composer_path
from tests.support.faults import eventually
from tests.support.tmux import Tmux, daemon_cockpit, daemon_env, hz
from tests.tui import worlds


def test_approve_a_draft_from_the_review_queue_through_the_daemon(
    tmp_path: Path, tmux: Tmux
) -> None:
    world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    document = world.document("notes-digest")
    assert worlds.TAG in document.read_text()
    env = daemon_env(world.home.root)
    with daemon_cockpit(tmux, env, lambda s: "notes-digest" in s) as shown:
        assert "daemon (pid" in shown
        tmux.keys("F4")
        tmux.wait_for(lambda s: "draft 1 of 1" in s, "the review queue")
        tmux.keys("a")
        shown = tmux.wait_for(lambda s: "notes-digest: draft approved" in s, "the approval")
        assert "nothing waits for review" in shown
        approved = document.read_text()
        assert worlds.TAG not in approved and "shipped search" in approved
        tmux.keys("Escape", "q")
        tmux.assert_exits("the cockpit did not exit on q")


def test_issue14_item3_review_since_last_approved_then_reject_and_undo(
    tmp_path: Path, tmux: Tmux
) -> None:
    """The real ``hz`` on a daemon: the desk diffs the new draft against the text approved
    last time; ``x`` rejects, ``u`` within the window takes it back: the draft still waits."""
    world = asyncio.run(worlds.build_redrafted(tmp_path, names=("notes-digest",)))
    document = world.document("notes-digest")
    settings = world.home.settings_path
    # A window far longer than the test needs: the keys never race the clock.
    settings.write_text(settings.read_text() + "\n[cockpit]\nundo_seconds = 600\n")
    env = daemon_env(world.home.root)
    with daemon_cockpit(tmux, env, lambda s: "notes-digest" in s):
        tmux.keys("F4")
        shown = tmux.wait_for(lambda s: "shipped fuzzy" in s, "the diff since approved")
        # The approval's date is whatever the machine's clock said when the world was built.
        assert re.search(r"since last approved \(\d{4}-\d\d-\d\d", shown), shown
        assert "- - shipped fuzzy search" in shown and "+ - shipped search" in shown, shown
        tmux.keys("x")
        tmux.wait_for(lambda s: "1 rejected: u undoes" in s, "the held rejection")
        tmux.keys("u")
        # The lasting state, not the toast: "reject undone" shows for a few seconds, which a
        # loaded machine can spend between two looks at the screen.
        tmux.wait_for(
            lambda s: "draft 1 of 1" in s and "u undoes" not in s,
            "the draft back in the queue with no rejection held",
        )
        listed = hz(env, "drafts", "--json")
        assert listed.returncode == 0 and "notes-digest" in listed.stdout
        assert worlds.TAG in document.read_text()
        tmux.keys("Escape", "q")
        tmux.assert_exits("the cockpit did not exit on q")
        assert worlds.TAG in document.read_text(), "nothing was held, so nothing was sent"


def test_issue14_item4_a_multi_line_steer_from_the_composer_in_tmux(
    tmp_path: Path, tmux: Tmux
) -> None:
    """issue 14 item 4: Ctrl+J (tmux ``C-j``) starts a line, Enter sends both as one steer.

    Shift+Enter reaches an application under tmux as a plain Enter, so Ctrl+J
    is the new line that works in every terminal; the message lands in the
    running turn with its newline, and ``K`` then asks "Stop think?".

    The model is held while the steer is typed and again once the turn took it, so however
    slow the machine, the steer reaches the think step and the stop finds it running.
    """
    world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    heinzel_id = world.ids["notes-digest"]
    hold = tmp_path / "hold"
    env = daemon_env(world.home.root, HZ_MODEL_DELAY_MS="1000", HZ_MODEL_HOLD_FILE=str(hold))
    spine = world.home.heinzel_dir(heinzel_id) / "session.jsonl"
    inbox = world.home.heinzel_dir(heinzel_id) / "inbox"

    def admitted() -> list[dict[str, str]]:
        found = [*inbox.glob("*.json"), *inbox.glob("delivered/*.json")]
        return [r for path in found if (r := json.loads(path.read_text())).get("kind") == "chat"]

    with daemon_cockpit(tmux, env, lambda s: "notes-digest" in s and "daemon (pid" in s):
        tmux.keys("Enter")
        tmux.wait_for(
            lambda s: "Live turn" in s and "· last" in s and "running:" not in s,
            "the heinzel page, no turn running (the daemon's first tick may have run one)",
        )
        world.add_note(
            "wednesday.md", "# Wednesday\n" + "".join(f"- item {n}\n" for n in range(14))
        )
        hold.touch()
        tmux.keys("w")
        tmux.wait_for(lambda s: "running: think" in s, "the woken turn thinking")
        tmux.keys("i", "C-t")
        tmux.wait_for(lambda s: "STEER" in s, "the composer in STEER mode")
        tmux.type_text("name the owners")
        tmux.keys("C-j")
        tmux.type_text("and the dates")
        shown = tmux.wait_for(
            lambda s: "name the owners" in s and "and the dates" in s, "two lines typed"
        )
        assert "Not sent" not in shown
        tmux.keys("Enter")
        eventually(admitted, "the steer admitted")
        hold.unlink()  # the model's next request takes the steer
        eventually(lambda: '"turn.steered"' in spine.read_text(), "the steer taken")
        hold.touch()  # and the think step goes on until it is stopped
        tmux.wait_for(lambda s: "1 steered" in s, "the steer shown as taken by the running turn")
        steers = admitted()
        assert [(r["message"], r["mode"]) for r in steers] == [
            ("name the owners\nand the dates", "steer")
        ]
        lines = spine.read_text().splitlines()
        steered = [json.loads(line) for line in lines if '"turn.steered"' in line]
        assert [e["data"]["request_id"] for e in steered] == [steers[0]["request_id"]]
        tmux.keys("Escape", "K")
        tmux.wait_for(lambda s: "Stop think?" in s, "the stop question naming the step")
        tmux.keys("y")  # Enter alone is Cancel
        tmux.wait_for(lambda s: "the turn was stopped" in s, "the turn stopped")


def test_s6_a_paste_with_escape_codes_stays_text_in_the_composer_until_enter(
    tmp_path: Path, tmux: Tmux
) -> None:
    """A bracketed paste holding ESC (coloured log lines) arrives as one paste: Textual's parser
    turned everything after an ESC into key presses, so a pasted line break was Enter (a message
    sent) and the rest landed out of order. Here nothing is sent, the composer holds the lines
    in order without their colour codes, and keys typed after the paste still reach it."""
    world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    heinzel_id = world.ids["notes-digest"]
    env = daemon_env(world.home.root)
    logs = "".join(f"\x1b[3{n % 8}mlog line {n}\x1b[0m\n" for n in range(60))
    pasted = tmp_path / "pasted.txt"
    pasted.write_text(f"alpha\x1b[31mred\x1b[0m\nbravo\ncharlie\n{logs}omega")
    with daemon_cockpit(tmux, env, lambda s: "notes-digest" in s and "daemon (pid" in s):
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Live turn" in s, "the heinzel page")
        tmux.keys("i")
        tmux.run("load-buffer", "-b", "hz-paste", str(pasted))
        tmux.run("paste-buffer", "-p", "-b", "hz-paste", "-t", tmux.session)
        tmux.type_text(" typed after")
        tmux.wait_for(lambda s: "omega typed after" in s, "the keys typed after the paste")
        kept = composer_path(world.home.root, heinzel_id)
        expected = "alphared\nbravo\ncharlie\n" + logs.replace("\x1b[0m", "")
        expected = re.sub(r"\x1b\[3\dm", "", expected) + "omega typed after"

        def saved() -> dict[str, object]:
            return json.loads(kept.read_text()) if kept.exists() else {}

        shown = tmux.wait_for(
            lambda s: saved().get("text") == expected, f"the composer saved as {expected!r}"
        )
        assert "consumed" not in shown and "Not sent" not in shown, shown
        assert saved()["history"] == [] and saved()["outgoing"] is None, "a message went out"
        inbox = world.home.heinzel_dir(heinzel_id) / "inbox"
        kept = [*inbox.glob("*.json"), *inbox.glob("delivered/*.json")]
        assert not [p for p in kept if '"chat"' in p.read_text()]
