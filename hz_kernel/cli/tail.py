"""``hz heinzel wake NAME --follow`` and ``hz heinzel tail NAME``: one turn, live, from the feed.

Both print the turn as it happens — each step as it is done, the model's
output as it streams, each effect as it is journalled — and end with the
line ``hz heinzel wake`` prints, when the turn finishes, is skipped or
parks itself to wait. ``wake --follow`` exits as ``wake`` does (1 when the
turn failed). ``tail`` follows the heinzel's running turn from where it
stands (what ran so far is printed first), or else the next turn that
starts; it needs a daemon, since only the process that runs a turn sees it
live.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hz_kernel import operations as ops
from hz_kernel.client import FeedItem, KernelClient, LocalClient
from hz_kernel.connect import TURN_ENDS, feed_edge, reattach
from hz_kernel.errors import HzError, UsageError
from hz_kernel.following import SHOWN_TYPES, BodyCursor, chunk_text
from hz_kernel.home import Home

if TYPE_CHECKING:
    from hz_kernel import api

#: How long a follower waits for the next daemon when its own goes away mid-turn (a restart
#: drains first, so the old one is gone only once the new one is about to start).
RESTART_WAIT_S = 30.0
RESTART_POLL_S = 0.2


def register(hsub: Any, wake: argparse.ArgumentParser) -> None:
    """``--follow`` on ``wake``, and the ``tail`` command."""
    wake.add_argument("--follow", action="store_true", help="print the turn live until it ends")
    p = hsub.add_parser("tail", help="print the running turn (or the next one) live until it ends")
    p.add_argument("name")
    p.set_defaults(run=cmd_tail)


class TurnPrinter:
    """Prints one heinzel's turn from feed items; switches to any turn that starts later."""

    def __init__(self, name: str, heinzel: str) -> None:
        self.name = name
        self.heinzel = heinzel
        self.turn: str | None = None
        self.cursor: BodyCursor | None = None
        self.last_seq = 0
        self.effects: dict[str, str] = {}
        self.midline = False

    def out(self, text: str) -> None:
        if not text:
            return
        sys.stdout.write(text)
        sys.stdout.flush()
        self.midline = not text.endswith("\n")

    def line(self, text: str) -> None:
        self.out(("\n" if self.midline else "") + text + "\n")

    def start(self, turn: str, offset: int = 0) -> None:
        self.turn = turn
        self.cursor = BodyCursor(self.heinzel, turn, offset)
        self.effects.clear()

    def event(self, event: dict[str, Any]) -> None:
        """Print one spine event of the followed turn (repeats by seq are skipped)."""
        seq = int(event.get("seq") or 0)
        if seq and seq <= self.last_seq:
            return
        self.last_seq = max(self.last_seq, seq)
        said = describe(event, self.effects)
        if said:
            self.line(said)

    async def follow(self, client: KernelClient, after: int | None) -> dict[str, Any]:
        """Print feed items from ``after`` until the followed turn ends; its last event.

        When this home's daemon goes away mid-turn (a restart drains it, the
        next one resumes the turn), the feed is taken up again on the next
        daemon from the last position read, so nothing is missed or printed twice.
        """
        from hz_kernel.http_client import FeedLost  # the HTTP stack, for following only

        taken: list[KernelClient] = []
        try:
            while True:
                with contextlib.suppress(FeedLost):
                    async for item in client.subscribe(after):
                        ended = await self.take(client, item)
                        if ended is not None:
                            return ended
                after = getattr(client, "feed_position", after)
                client = await next_daemon(client)
                taken.append(client)
        finally:
            for extra in taken:
                await extra.close()

    async def take(self, client: KernelClient, item: FeedItem) -> dict[str, Any] | None:
        """Print one feed item of the followed heinzel; the turn's last event when it ends."""
        if item.heinzel != self.heinzel or item.turn is None:
            return None
        if item.type == "event" and item.event is not None:
            kind = item.event["kind"]
            if kind in ("turn.started", "turn.skipped") and item.turn != self.turn:
                self.start(item.turn)
            if item.turn != self.turn:
                return None
            if kind in TURN_ENDS:
                await self.catch_up(client)
            self.event(item.event)
            return item.event if kind in TURN_ENDS else None
        if item.type == "body" and item.body is not None and item.turn == self.turn:
            assert self.cursor is not None
            text = self.cursor.take(item.body)
            self.out(text if text is not None else await self.cursor.read(client))
        return None

    async def catch_up(self, client: KernelClient) -> None:
        """Print what the body holds beyond what was printed (a dropped or late delta)."""
        if self.cursor is not None:
            self.out(await self.cursor.read(client))


async def next_daemon(client: KernelClient) -> KernelClient:
    """A client of the daemon that took over this home from ``client``'s, once one answers.

    Only a daemon of this machine's home can be found again (its discovery
    file names the next one); ``HZD040`` for a remote daemon, an embedded
    kernel, or when none comes within ``RESTART_WAIT_S``.
    """
    from hz_kernel.http_client import HttpClient

    lost = HzError("HZD040", "the daemon closed the feed before the turn ended")
    if not isinstance(client, HttpClient) or client.remote:
        raise lost
    home = Home.resolve(Path(client.discovery.home))
    sys.stderr.write("the daemon went away; waiting for the next one to follow the turn…\n")
    deadline = time.monotonic() + RESTART_WAIT_S
    while time.monotonic() < deadline:
        fresh = await reattach(home)
        if fresh is not None:
            fresh.feed_generation = client.feed_generation
            return fresh
        await asyncio.sleep(RESTART_POLL_S)
    raise lost


def describe(event: dict[str, Any], effects: dict[str, str]) -> str | None:
    """One line for a spine event of a turn; None for the kinds not worth a line."""
    kind, data = event["kind"], event.get("data") or {}
    if kind == "turn.started":
        causes = ", ".join(str(c) for c in data.get("causes") or [data.get("cause")] if c)
        return f"turn {event.get('turn')} started ({causes})"
    if kind == "step.done":
        report = f": {data['report']}" if data.get("report") else ""
        return f"✓ {data.get('step')}{report}"
    if kind == "attempt.started":
        # Every request counts (a tool round is one): "call", not "attempt", which reads as a retry.
        return f"· {data.get('step')}: model call {data.get('attempt')} to {data.get('model')}"
    if kind == "attempt.retry":
        return f"· retry in {data.get('delay_ms')} ms: {data.get('error')}"
    if kind == "attempt.failed":
        return f"· attempt failed: {data.get('code', '')} {data.get('error', '')}".rstrip()
    if kind == "turn.steered":
        return "· a message steered the turn"
    if kind == "effect.started":
        effects[str(data.get("key"))] = str(data.get("effect"))
        through = f" with {data['target']}" if data.get("target") else ""
        return f"· effect {data.get('effect')}{through} started ({data.get('key')})"
    if kind in ("effect.done", "effect.failed", "effect.interrupted"):
        what = effects.get(str(data.get("key")), "effect")
        error = f": {data['error']}" if data.get("error") else ""
        return f"· effect {what} {kind.removeprefix('effect.')}{error}"
    if kind == "draft.placed":
        return f"· draft placed in {data.get('asset')}"
    if kind == "question.asked":
        return "· question asked"
    return None


def running(events: list[dict[str, Any]]) -> bool:
    """Whether a turn's events so far leave it under way (not ended, not parked to wait)."""
    under_way = False
    for event in events:
        if event["kind"] in TURN_ENDS:
            under_way = False
        elif event["kind"] in ("turn.started", "turn.resumed"):
            under_way = True
    return under_way


def ending(name: str, event: dict[str, Any]) -> int:
    """The closing line, as ``hz heinzel wake`` prints it; the exit code (1: the turn failed)."""
    kind, data = event["kind"], event.get("data") or {}
    if kind == "turn.waiting":
        until = f" until {data['until']}" if data.get("until") else ""
        sys.stdout.write(f"{name}: waiting{until}\n")
        return 0
    if kind == "turn.skipped":
        sys.stdout.write(f"{name}: skipped ({data.get('reason')})\n")
        return 0
    if data.get("disposition") == "failed":
        sys.stdout.write(f"{name}: failed\n")
        sys.stderr.write(f"{data.get('reason') or data.get('report') or 'the turn failed'}\n")
        return 1
    reason = f" ({data['reason']})" if data.get("reason") else ""
    sys.stdout.write(
        f"{name}: {data.get('disposition')}{reason}: {data.get('report') or ''}\n".replace(
            ": \n", "\n"
        )
    )
    return 0


def waiting_line(name: str, report: api.TurnReport) -> str | None:
    """What a daemon's answer to a wake says of a turn not running yet (None: it runs)."""
    turn = f" {report.turn}" if report.turn else ""
    if report.status == "waiting":
        if report.reason == "low-memory":
            return f"{name}: queued (low memory): turn{turn} starts once free memory is back"
        if report.reason == "capacity":
            return f"{name}: queued (capacity): turn{turn} starts when a turn slot frees"
        return (
            f"{name}: waiting: turn{turn} is parked until what it waits for comes "
            f"(hz heinzel show {name})"
        )
    if report.status == "requested":
        return f"{name}: queued behind the running turn{turn}; the turn after it takes the wake"
    return None


async def wake_follow(client: KernelClient, args: argparse.Namespace) -> int:
    """``wake --follow``: ask for the turn, print it live, exit as ``wake`` would."""
    if args.json:
        raise UsageError("HZU124", "--follow prints the turn as text; leave out --json")
    detail = await client.call(ops.SHOW, ops.HeinzelRef(ref=args.name))
    printer = TurnPrinter(args.name, detail.heinzel.id)
    edge = await feed_edge(client)
    following = asyncio.ensure_future(printer.follow(client, edge))
    try:
        report = await client.call(
            ops.WAKE, ops.WakeRequest(ref=args.name, request_id=args.request_id)
        )
        if report.status in ("none", "queued"):
            sys.stdout.write(
                f"{args.name}: no turn ran\n"
                if report.status == "none"
                else f"{args.name}: queued; the next tick runs it\n"
            )
            return 0
        waits = waiting_line(args.name, report)
        if waits is not None:
            sys.stdout.write(waits + "\n")
            sys.stdout.flush()
        return ending(args.name, await following)
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following


async def cmd_tail(client: KernelClient, args: argparse.Namespace) -> int:
    """``tail``: the running turn from where it stands, else the next one, until it ends."""
    if isinstance(client, LocalClient):
        raise HzError(
            "HZU123",
            "no daemon runs for this home, so no turn runs where tail could see it "
            "(start one with: hz daemon start)",
            args.name,
        )
    edge = await feed_edge(client)
    now = await client.call(ops.TURN_BODY, ops.TurnBodyRequest(ref=args.name, types=SHOWN_TYPES))
    printer = TurnPrinter(args.name, now.heinzel)
    if now.turn is not None and running(now.events):
        printer.start(now.turn, now.offset)
        for event in now.events:
            printer.event(event)
        printer.out(chunk_text(now.records))
        if now.more:
            await printer.catch_up(client)
    else:
        sys.stdout.write(f"{args.name}: no turn is running; waiting for the next one\n")
        sys.stdout.flush()
    return ending(args.name, await printer.follow(client, edge))
