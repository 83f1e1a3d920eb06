"""``hz mcp``: the MCP head over stdio, for an MCP client that starts it (Claude Code, Codex).

The client it runs on is the one every command that changes state gets: the
home's daemon, started if none runs, or under ``--embedded`` a kernel in
this process. The wire is this process's standard input and output; the
SDK points file descriptor 1 at standard error while it serves, so stray
output can never corrupt a message. A line that is no JSON-RPC message is
answered with a coded error (``HZD138``) and the next line is read.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from hz_kernel.cli.parser import writes
from hz_kernel.client import KernelClient


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "mcp",
        help="serve hz's operations to an MCP client over stdio (docs/mcp.md)",
    )
    parser.set_defaults(run=cmd_mcp)


@writes
async def cmd_mcp(client: KernelClient, args: argparse.Namespace) -> int:
    from mcp.server.stdio import stdio_server

    from hz_kernel.mcp_head import Refusing, build_server

    server = build_server(client)
    # The command line wraps stdout to catch a reader that went away; the wire needs the
    # process's own descriptor.
    try:
        with contextlib.redirect_stdout(sys.__stdout__):
            async with stdio_server() as (read, write):
                refusing = Refusing(read, write, "stdin")
                await server.run(refusing, write, server.create_initialization_options())
    except* (BrokenPipeError, ConnectionResetError):
        # The client went away mid-answer: its session is over, nothing of ours is broken.
        sys.stderr.write("hz mcp: the client closed the connection\n")
    return 0
