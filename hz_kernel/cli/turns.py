"""``hz heinzel wake|tail|chat|stop|retry|answer|lessons|dismiss|forget|resume``, ``hz drafts``:
turns and the conversation with a heinzel (the kernel's side is ``hz_kernel.commands.turns``)."""

from __future__ import annotations

import argparse
import sys

from hz_kernel import operations as ops
from hz_kernel.cli import tail
from hz_kernel.cli.output import emit_json, table
from hz_kernel.cli.parser import Subcommands, writes
from hz_kernel.client import KernelClient


@writes
async def cmd_wake(client: KernelClient, args: argparse.Namespace) -> int:
    if getattr(args, "follow", False):
        return await tail.wake_follow(client, args)
    if args.command == "resume":
        report = await client.call(ops.RESUME, ops.HeinzelRef(ref=args.name))
    else:
        request = ops.WakeRequest(ref=args.name, request_id=args.request_id)
        report = await client.call(ops.WAKE, request)
    if args.json:
        emit_json(report)
        return 0
    if report.status == "none":
        sys.stdout.write(f"{args.name}: no turn ran\n")
        return 0
    waits = tail.waiting_line(args.name, report)
    if waits is not None:
        sys.stdout.write(waits + "\n")
        return 0
    if report.status == "started":
        turn = f" (turn {report.turn})" if report.turn else ""
        sys.stdout.write(f"{args.name}: started{turn}\n")
        return 0
    if report.disposition == "failed":
        sys.stdout.write(f"{args.name}: failed\n")
        sys.stderr.write(f"{report.reason or report.report or 'the turn failed'}\n")
        return 1
    outcome = report.disposition or report.status
    reason = f" ({report.reason})" if report.reason else ""
    sys.stdout.write(
        f"{args.name}: {outcome}{reason}: {report.report or ''}\n".replace(": \n", "\n")
    )
    return 0


async def cmd_drafts(client: KernelClient, args: argparse.Namespace) -> int:
    listed = await client.call(ops.DRAFTS, ops.Empty())
    if args.json:
        emit_json(listed.model_dump(mode="json"))
        return 0
    if not listed.items:
        sys.stdout.write("no drafts are waiting\n")
        return 0
    rows = [
        [
            d.heinzel_name or d.heinzel,
            d.asset or "-",
            f"v{d.contract_version}",
            (d.placed_at or "")[:16],
            d.key,
        ]
        for d in listed.items
    ]
    table(rows, ["HEINZEL", "ASSET", "CONTRACT", "PLACED", "KEY"])
    return 0


@writes
async def cmd_chat(client: KernelClient, args: argparse.Namespace) -> int:
    request = ops.ChatRequest(
        ref=args.name, message=args.message, mode=args.mode, request_id=args.request_id
    )
    admitted = await client.call(ops.CHAT, request)
    if args.json:
        emit_json(admitted)
    else:
        turn = f" (turn {admitted.turn})" if admitted.turn else ""
        sys.stdout.write(f"{args.name}: message {admitted.request_id} {admitted.status}{turn}\n")
    return 0


@writes
async def cmd_turn_command(client: KernelClient, args: argparse.Namespace) -> int:
    """stop, retry and answer: each ends in a turn report."""
    if args.command == "stop":
        report = await client.call(ops.STOP, ops.StopRequest(ref=args.name))
    elif args.command == "retry":
        report = await client.call(ops.RETRY, ops.RetryRequest(ref=args.name, hint=args.hint))
    else:
        report = await client.call(
            ops.ANSWER, ops.AnswerRequest(ref=args.name, message=args.message)
        )
    if args.json:
        emit_json(report)
        return 0
    if report.status == "none":
        none = "no turn is running; nothing to stop" if args.command == "stop" else "no turn ran"
        sys.stdout.write(f"{args.name}: {none}\n")
        return 0
    outcome = report.disposition or report.status
    reason = f" ({report.reason})" if report.reason else ""
    sys.stdout.write(
        f"{args.name}: {outcome}{reason}" + (f": {report.report}" if report.report else "") + "\n"
    )
    return 0


async def cmd_lessons(client: KernelClient, args: argparse.Namespace) -> int:
    detail = await client.call(ops.SHOW, ops.HeinzelRef(ref=args.name))
    if args.json:
        emit_json([lesson.model_dump(mode="json") for lesson in detail.lessons])
        return 0
    if not detail.lessons:
        sys.stdout.write(f"{args.name} has learned nothing from you yet\n")
    for lesson in detail.lessons:
        mark = "  (dismissed)" if lesson.dismissed else ""
        sys.stdout.write(f"{lesson.lesson_id}  {lesson.lesson}{mark}\n")
    return 0


@writes
async def cmd_dismiss(client: KernelClient, args: argparse.Namespace) -> int:
    decided = await client.call(
        ops.DISMISS, ops.DismissRequest(ref=args.name, lesson_id=args.lesson)
    )
    if args.json:
        emit_json(decided)
    else:
        sys.stdout.write(f"dismissed {args.lesson}; it is never shown to the model again\n")
    return 0


@writes
async def cmd_forget(client: KernelClient, args: argparse.Namespace) -> int:
    request = ops.ForgetRequest(ref=args.name, turn=args.turn, instead=args.instead or None)
    decided = await client.call(ops.FORGET, request)
    if args.json:
        emit_json(decided)
    elif decided.what != "forget":
        sys.stdout.write(f"turn {request.turn} was already so; nothing changed\n")
    else:
        said = f"; the model reads instead: {args.instead}" if args.instead else ""
        sys.stdout.write(
            f"turn {request.turn} is out of what the model sees from now on{said}; "
            "the record keeps it\n"
        )
    return 0


def register_heinzel(hsub: Subcommands) -> None:
    """``wake`` (and ``tail``), ``chat``, ``stop``, ``retry``, ``answer``, ``lessons``,
    ``dismiss`` and ``resume`` under ``hz heinzel``."""
    p = hsub.add_parser("wake", help="run a turn now")
    p.add_argument("name")
    p.add_argument("--request-id", help="an idempotency key: the same id never runs twice")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_wake)
    tail.register(hsub, p)

    p = hsub.add_parser("chat", help="send a message: steer a running turn or queue the next")
    p.add_argument("name")
    p.add_argument("message")
    p.add_argument("--mode", choices=["steer", "queue"], default="queue")
    p.add_argument("--request-id", help="an idempotency key: a retry never makes a second message")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_chat)

    p = hsub.add_parser("stop", help="stop the running turn (queued messages stay)")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_turn_command)

    p = hsub.add_parser(
        "retry", help='try the last turn again, e.g. hz heinzel retry NAME "shorter"'
    )
    p.add_argument("name")
    p.add_argument("hint", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_turn_command)

    p = hsub.add_parser("answer", help="answer the question a heinzel asked")
    p.add_argument("name")
    p.add_argument("message")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_turn_command)

    p = hsub.add_parser("lessons", help="what a heinzel learned from your edits")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_lessons)

    p = hsub.add_parser("dismiss", help="dismiss a lesson (kept, never shown to the model again)")
    p.add_argument("name")
    p.add_argument("lesson")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_dismiss)

    p = hsub.add_parser(
        "forget", help="keep a turn out of what the model sees (the record keeps it)"
    )
    p.add_argument("name")
    p.add_argument(
        "turn", help="the turn's id (hz heinzel show NAME --json lists them; a transcript's title)"
    )
    p.add_argument("--instead", metavar="TEXT", help="a line the model reads in its place")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_forget)

    p = hsub.add_parser("resume", help="continue an interrupted or waiting turn now")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_wake)


def register(sub: Subcommands) -> None:
    """``hz drafts``."""
    p = sub.add_parser("drafts", help="the drafts waiting for your review")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_drafts)
