"""Helpers for the tick's integration tests: contracts with chosen inputs, real worlds, kernels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ulid import ULID

from hz_kernel.commands.tick import TickCommands
from hz_kernel.contracts import InputSpec, compile_contract
from hz_kernel.contracts.model import SOURCE_CAPABILITY
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.envelope import GENESIS, encode, line_hash
from hz_kernel.vocabulary import ContractApproved, HeinzelCreated
from tests.support.homes import World

TickKernel: type[Kernel] = (
    Kernel if issubclass(Kernel, TickCommands) else type("TickKernel", (TickCommands, Kernel), {})
)
"""The kernel with the tick's commands, whether or not ``Kernel`` composes them yet."""


def contract(
    name: str,
    *,
    inputs: dict[str, dict[str, Any]] | None = None,
    schedule: str | None = None,
    if_moved: bool = False,
    document: str | None = None,
    valid_for: str | None = None,
) -> str:
    """A small contract: these inputs, a draft into ``document#name``, an optional schedule."""
    inputs = inputs or {}
    requires = sorted({SOURCE_CAPABILITY[spec["source"]] for spec in inputs.values()})
    hz: dict[str, Any] = {
        "inputs": inputs,
        "requires": [*requires, "documents:write"],
        "publishes": [
            {"capability": "documents.place_draft", "asset": f"doc:{document or name}.md#{name}"}
        ],
        "outputs": {name: {"valid_for": valid_for} if valid_for else {}},
        "approvers": ["owner"],
    }
    if schedule:
        hz["schedule"] = schedule
    if if_moved:
        hz["render_on_schedule"] = "if-moved"
    return (
        f"---\nname: {name}\nhz: {json.dumps(hz)}\n---\n# {name}\n\n"
        f"### Goal\n\nKeep the {name} section true.\n"
    )


def counted_shell(data: Path, counter: Path, recheck: str = "1h") -> dict[str, Any]:
    """A shell input that prints ``data`` and leaves one byte in ``counter`` per real fetch.

    The recheck keeps the engine's gather on the staged result when it runs
    a minute after the tick fetched (it judges freshness by the recheck).
    """
    return {
        "source": "shell",
        "method": "run",
        "args": {"command": f"printf x >> '{counter}'; cat '{data}'"},
        "recheck": recheck,
    }


def fetch_count(counter: Path) -> int:
    return len(counter.read_bytes()) if counter.exists() else 0


async def approved(kernel: Kernel, text: str) -> str:
    """A heinzel made the way a user makes one: ``new``, then ``approve``."""
    made = await kernel.new(text=text)
    await kernel.approve(ref=made.id)
    return made.id


def written_heinzels(home: Path, text: str, inputs_by_name: dict[str, dict[str, Any]]) -> None:
    """Heinzels of one contract shape, each with its own inputs, written straight to disk.

    Compiling and approving through the kernel costs tens of milliseconds a
    heinzel on a slow machine (YAML, several fsyncs), so the scale tests
    compile once and write what ``new`` + ``approve`` leave on disk — a
    chained spine with ``heinzel.created`` and ``contract.approved``, and
    contract version 1 — then let the kernel index them as it would any
    spine it has not seen.
    """
    compiled = compile_contract(text, source="test")
    for name, inputs in inputs_by_name.items():
        specs = {key: InputSpec.model_validate(spec) for key, spec in inputs.items()}
        own = compiled.model_copy(
            update={"name": name, "hz": compiled.hz.model_copy(update={"inputs": specs})}
        )
        heinzel_dir = Home(home).heinzel_dir(f"hz-{ULID()}")
        (heinzel_dir / "contract").mkdir(parents=True, mode=0o700)
        (heinzel_dir / "contract" / "v1.prose.md").write_text(text)
        (heinzel_dir / "contract" / "v1.compiled.json").write_text(own.model_dump_json())
        prev, lines = GENESIS, []
        events = (
            HeinzelCreated(name=name),
            ContractApproved(version=1, fingerprint=own.fingerprint),
        )
        for seq, payload in enumerate(events, start=1):
            line = encode(payload, seq=seq, prev=prev, turn=None, key=None)
            lines.append(line)
            prev = line_hash(line)
        (heinzel_dir / "session.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def write_settings(home: Path, **heinzel: object) -> None:
    """Add a ``[heinzel]`` table to the world's ``hz.toml`` (before the kernel opens)."""
    lines = [f"{key} = {json.dumps(value)}" for key, value in heinzel.items()]
    path = home / "hz.toml"
    path.write_text(path.read_text() + "\n[heinzel]\n" + "\n".join(lines) + "\n")


async def open_kernel(home: Path) -> Kernel:
    return await TickKernel.open(Home.resolve(home))


def spine_kinds(home: Path, heinzel_id: str) -> list[str]:
    path = home / "heinzel" / heinzel_id / "session.jsonl"
    return [json.loads(line)["kind"] for line in path.read_bytes().splitlines() if line.strip()]


def made(world: World, name: str, text: str, now: str) -> str:
    """A heinzel from ``text``, its contract approved, at ``now``: its id."""
    path = world.root / f"{name}.prose.md"
    path.write_text(text)
    world.hz("heinzel", "new", str(path), HZ_NOW=now)
    world.hz("approve", name, HZ_NOW=now)
    shown = json.loads(world.hz("heinzel", "show", name, "--json", HZ_NOW=now).stdout)
    return str(shown["heinzel"]["id"])
