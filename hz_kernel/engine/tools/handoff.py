"""``handoff``: the model hands a task to a coding agent runner and goes on with its report.

Granted by ``agents:handoff``. The runner is one of ``[handoff.runners]`` in
``hz.toml`` and works in a folder or repository the contract's inputs name.
Not replay-safe: ``effect.started`` is durable before the runner starts, and
a call that a crash, a stop or a drain cut short is settled interrupted and
never run again. The runner's output streams into the turn body
(``handoff_output``, shown live); the spine gets ``handoff.finished`` with
hashes, sizes, exit status and duration, and ``usage {purpose: handoff}``
when the runner reported its cost. ``docs/handoff.md`` has the details.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hz_kernel.adapters.sources import sha256_hex
from hz_kernel.clock import now_utc
from hz_kernel.config import (
    REPORT_FILE_PLACEHOLDER,
    TASK_PLACEHOLDER,
    HandoffRunner,
    HandoffSettings,
)
from hz_kernel.engine.tools.base import (
    BAD_ARGUMENTS,
    INTERRUPTED,
    NOT_READABLE,
    EffectCall,
    ToolArgs,
    ToolRegistry,
    ToolSpec,
    refused,
)
from hz_kernel.engine.tools.grant import Grant
from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import NotRegularFile, open_regular
from hz_kernel.vocabulary import (
    EffectDone,
    EffectFailed,
    EffectInterrupted,
    HandoffFinished,
    Usage,
)

NAME = "handoff"
CAPABILITY = "agents:handoff"
NO_RUNNER = "HZE071"
NOT_STARTED = "HZE072"
EXITED = "HZE073"
TIMED_OUT = "HZE074"

#: Body records: a piece of the runner's output as it came, and the runner's end.
OUTPUT, ENDED = "handoff_output", "handoff"
CHUNK = 64 * 1024
STDERR_KEPT = 16 * 1024
GRACE_S = 2.0
"""How long a runner has to end after SIGTERM before its process group is killed."""
DRAIN_S = 5.0
"""How long hz reads on after the runner exited, for output a child of it still writes."""
EXIT_POLL_S = 0.05
"""How often the runner's own exit is looked for."""
WORDS_SHOWN = 300


class HandoffArgs(ToolArgs):
    task: str = Field(
        min_length=1,
        max_length=50_000,
        description="what the coding agent is to do, with everything it needs to know",
    )
    workdir: str = Field(
        min_length=1,
        description="where it works: a folder or repository your inputs name, or a folder in one",
    )
    runner: str | None = Field(
        default=None, description="which configured runner; the home's default when left out"
    )


class RunnerUsage(BaseModel):
    """The cost line a runner may print last: ``{"usd": 0.12, "tokens": 3400}``."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)
    usd: float | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    tokens_cached: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _says_something(self) -> RunnerUsage:
        if self.usd is None and self.tokens is None:
            raise ValueError("a cost line names usd or tokens")
        return self


@dataclass
class Captured:
    """The runner's stdout within ``limit`` bytes: the first half streamed into the body as it
    comes, the last half kept in memory, the middle counted (``cut``) and left out."""

    limit: int
    call: EffectCall
    size: int = 0
    cut: int = 0
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )

    def take(self, data: bytes) -> None:
        self.size += len(data)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            streamed, data = data[:room], data[room:]
            self.head += streamed
            text = self.decoder.decode(streamed)
            if text:
                self.call.record(OUTPUT, {"call": self.call.call, "text": text}, False)
        if data:
            self.tail += data
            over = len(self.tail) - (self.limit - self.limit // 2)
            if over > 0:
                self.cut += over
                del self.tail[:over]

    def text(self) -> str:
        """The transcript as kept: head, a marked cut if any, tail."""
        head = self.head.decode("utf-8", errors="replace")
        marker = f"\n[hz: {self.cut} bytes of output left out here]\n" if self.cut else ""
        return head + marker + self.tail.decode("utf-8", errors="replace")

    def tail_text(self) -> str:
        return self.tail.decode("utf-8", errors="replace")


@dataclass
class Kept:
    """The last bytes of a stream (the runner's stderr, for its last words)."""

    limit: int
    data: bytearray = field(default_factory=bytearray)

    def take(self, chunk: bytes) -> None:
        self.data += chunk
        del self.data[: max(0, len(self.data) - self.limit)]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def pick_runner(settings: HandoffSettings, wanted: str | None) -> tuple[str, HandoffRunner]:
    """The runner a call names, or the home's default; ``HZE071`` with the known ones else."""
    name = (
        wanted or settings.default or (next(iter(settings.runners)) if settings.runners else None)
    )
    if name is None:
        raise HzError(
            NO_RUNNER, "no runner is configured: add one under [handoff.runners] in hz.toml", NAME
        )
    runner = settings.runners.get(name)
    if runner is None:
        known = ", ".join(sorted(settings.runners))
        raise HzError(NO_RUNNER, f"no runner named {name!r}; configured: {known}", NAME)
    return name, runner


def working_dir(grant: Grant, raw: str) -> Path:
    """The folder a call names when an input names it: a repository, or a folder (or one in it)."""
    try:
        path = grant.repo(raw)
    except HzError:
        path = grant.file_or_folder(raw)
    if not path.is_dir():
        raise refused(NOT_READABLE, "not a folder", raw)
    return path


def command_line(
    runner: HandoffRunner, task: str, report_file: Path
) -> tuple[list[str], bytes | None]:
    """The arguments with the placeholders filled in, and the task for stdin when no argument
    takes it."""
    argv = [
        arg.replace(TASK_PLACEHOLDER, task).replace(REPORT_FILE_PLACEHOLDER, str(report_file))
        for arg in runner.command
    ]
    named = any(TASK_PLACEHOLDER in arg for arg in runner.command)
    if named and "\0" in task:
        raise refused(BAD_ARGUMENTS, "a task given as an argument may not hold a NUL", NAME)
    return argv, None if named else task.encode()


def time_left_s(runner: HandoffRunner, deadline: datetime | None) -> float:
    """The runner's own timeout, cut to what is left of the turn's (at least a second)."""
    if deadline is None:
        return runner.timeout_s
    left = (deadline - now_utc()).total_seconds()
    return max(1.0, min(runner.timeout_s, left))


def cost_line(text: str) -> tuple[str, RunnerUsage | None]:
    """``text`` without a last line that is a cost line, and that line's usage."""
    body, _, last = text.rstrip().rpartition("\n")
    try:
        usage = RunnerUsage.model_validate_json(last.strip())
    except ValidationError:
        return text, None
    return body, usage


def claude_result(text: str) -> tuple[str, RunnerUsage | None] | None:
    """The report and cost of Claude Code's JSON output: its last ``"type": "result"`` line."""
    for line in reversed(text.splitlines()):
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("type") == "result":
            usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
            cached = _count(usage.get("cache_read_input_tokens"))
            tokens = cached + sum(
                _count(usage.get(name))
                for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens")
            )
            cost = message.get("total_cost_usd")
            priced = isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0
            usd = float(cost) if priced else None
            spent = (
                RunnerUsage(usd=usd, tokens=tokens, tokens_cached=cached)
                if usd is not None or tokens
                else None
            )
            return str(message.get("result") or ""), spent
    return None


def _count(value: object) -> int:
    """A token count from a runner's JSON: a whole number of at least 0, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def read_report_file(path: Path, limit: int) -> str | None:
    """What the runner wrote to the file hz named, at most ``limit`` bytes; None if nothing."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except (OSError, NotRegularFile):
        return None
    with os.fdopen(fd, "rb") as file:
        return file.read(limit).decode("utf-8", errors="replace")


def report_of(
    runner: HandoffRunner, captured: Captured, report_file: Path
) -> tuple[str, RunnerUsage | None]:
    """The runner's final answer and what it says it cost."""
    output, usage = cost_line(captured.text())
    if runner.report == "claude-json":
        found = claude_result(captured.tail_text() or output)
        if found is not None:
            return found
    elif runner.report == "file":
        written = read_report_file(report_file, runner.max_output_bytes)
        if written is not None:
            return written.strip(), usage
    return output.strip(), usage


async def end_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the runner's process group, SIGKILL what is left after a grace, reap it.

    Reaping waits a grace at most: a process that left the group (``setsid``)
    may still hold the output pipes, and ``wait`` waits for them too.
    """
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(GRACE_S):
                await process.wait()
        except TimeoutError:
            pass
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(GRACE_S):
            await process.wait()


async def exited(process: asyncio.subprocess.Process) -> None:
    """Until the runner itself has ended. ``Process.wait`` also waits for its output pipes
    to close, which a child it left running (a dev server it started) may hold for good."""
    while process.returncode is None:
        await asyncio.sleep(EXIT_POLL_S)


async def run_runner(
    process: asyncio.subprocess.Process,
    stdin: bytes | None,
    captured: Captured,
    stderr: Kept,
    timeout_s: float,
) -> bool:
    """Feed the task, read the output until the runner ends; True when it ran out of time."""
    assert process.stdout is not None and process.stderr is not None

    async def feed() -> None:
        if process.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if stdin:
                process.stdin.write(stdin)
                await process.stdin.drain()
            process.stdin.close()

    async def pump(stream: asyncio.StreamReader, take: Kept | Captured) -> None:
        while chunk := await stream.read(CHUNK):
            take.take(chunk)

    readers = [
        asyncio.ensure_future(feed()),
        asyncio.ensure_future(pump(process.stdout, captured)),
        asyncio.ensure_future(pump(process.stderr, stderr)),
    ]
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout_s):
                await exited(process)
        except TimeoutError:
            timed_out = True
            await end_group(process)
        _, holding = await asyncio.wait(readers, timeout=DRAIN_S)
        if holding:  # what the runner left behind still holds its output: it ends with it
            await end_group(process)
    except BaseException:  # a stop, a drain or hz's own failure: the runner does not go on
        await end_group(process)
        raise
    finally:
        for reader in readers:
            reader.cancel()
    return timed_out


@dataclass(frozen=True)
class Ran:
    """How a runner's run ended, as the ledger and the model are told."""

    runner: str
    status: int
    timed_out: bool
    timeout_s: float
    duration_ms: int
    captured: Captured
    stderr: Kept
    report: str
    usage: RunnerUsage | None


async def hand_off(args: ToolArgs, grant: Grant, call: EffectCall) -> str:
    """Run the runner on the task as one journalled effect; its report is the call's result.

    Everything that can refuse the call does so before ``effect.started``. After
    it, the effect is always settled here: failed (the runner never started),
    done (it ran, whatever its exit status), or interrupted (hz itself failed
    midway); a cancellation (a stop, a drain) leaves it to the turn's end or
    resume to settle.
    """
    assert isinstance(args, HandoffArgs)
    name, runner = pick_runner(call.settings.handoff, args.runner)
    workdir = working_dir(grant, args.workdir)
    timeout_s = time_left_s(runner, call.deadline)
    with tempfile.TemporaryDirectory(prefix="hz-handoff-") as scratch:
        report_file = Path(scratch) / "report.md"
        argv, stdin = command_line(runner, args.task, report_file)
        await call.begin(NAME, name)
        try:
            process = await launch(argv, workdir, stdin is not None)
        except (OSError, ValueError) as exc:
            error = HzError(NOT_STARTED, f"the runner did not start: {_why(exc)}", name)
            await call.append(EffectFailed(key=call.key, error=error.one_line()[:600]))
            raise error from None
        began = time.monotonic()
        captured, stderr = Captured(runner.max_output_bytes, call), Kept(STDERR_KEPT)
        try:
            timed_out = await run_runner(process, stdin, captured, stderr, timeout_s)
        except asyncio.CancelledError:
            # The body says how it ended; the spine's settling is the turn's end's or resume's.
            call.record(ENDED, stopped(call, name, process, began, captured, stderr), True)
            raise
        try:
            assert process.returncode is not None  # reaped by run_runner
            report, usage = report_of(runner, captured, report_file)
            ran = Ran(
                runner=name,
                status=process.returncode,
                timed_out=timed_out,
                timeout_s=timeout_s,
                duration_ms=int((time.monotonic() - began) * 1000),
                captured=captured,
                stderr=stderr,
                report=report,
                usage=usage,
            )
            ended = ended_record(ran, call)
            await done(ended, call)
        except Exception:
            await call.append(EffectInterrupted(key=call.key, effect=NAME))
            raise
    await account(ended, call, frozenset())
    return answer(ended)


async def launch(argv: list[str], workdir: Path, stdin: bool) -> asyncio.subprocess.Process:
    """The runner's process, in a process group of its own (a stop ends the whole group)."""
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=workdir,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


def _why(exc: OSError | ValueError) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def stopped(
    call: EffectCall,
    runner: str,
    process: asyncio.subprocess.Process,
    began: float,
    captured: Captured,
    stderr: Kept,
) -> dict[str, object]:
    """The ``handoff`` body record of a runner a stop or a drain ended."""
    return {
        "call": call.call,
        "runner": runner,
        "exit_status": process.returncode if process.returncode is not None else -signal.SIGKILL,
        "stopped": True,
        "duration_ms": int((time.monotonic() - began) * 1000),
        "cut": captured.cut,
        "tail": captured.tail_text(),
        "stderr": stderr.text(),
    }


def ended_record(ran: Ran, call: EffectCall) -> dict[str, Any]:
    """The ``handoff`` body record of a run that ended: enough to answer the call again, and
    to account for it (``finished``, ``usage``) if a crash comes before the spine has."""
    transcript = ran.captured.text()
    finished = HandoffFinished(
        key=call.key,
        runner=ran.runner,
        exit_status=ran.status,
        timed_out=ran.timed_out,
        duration_ms=ran.duration_ms,
        transcript_hash=sha256_hex(transcript),
        transcript_size=ran.captured.size,
        transcript_cut=ran.captured.cut,
        report_hash=sha256_hex(ran.report),
        report_size=len(ran.report.encode()),
        priced=ran.usage is not None and ran.usage.usd is not None,
    )
    usage = (
        None
        if ran.usage is None
        else Usage(
            purpose="handoff",
            tokens=ran.usage.tokens or 0,
            tokens_cached=ran.usage.tokens_cached,
            usd=ran.usage.usd or 0.0,
            priced=None if ran.usage.usd is not None else False,
        )
    )
    return {
        "call": call.call,
        "runner": ran.runner,
        "exit_status": ran.status,
        "timed_out": ran.timed_out,
        "timeout_s": ran.timeout_s,
        "duration_ms": ran.duration_ms,
        "cut": ran.captured.cut,
        "tail": ran.captured.tail_text(),
        "stderr": ran.stderr.text(),
        "report": ran.report,
        "finished": finished.model_dump(mode="json"),
        "usage": None if usage is None else usage.model_dump(mode="json"),
    }


async def done(ended: dict[str, Any], call: EffectCall) -> None:
    """The run's end into the body, durable, then ``effect.done`` with the transcript's hash."""
    call.record(ENDED, ended, True)
    await call.append(EffectDone(key=call.key, hash=str(ended["finished"]["transcript_hash"])))


async def account(ended: Mapping[str, Any], call: EffectCall, recorded: frozenset[str]) -> None:
    """What the run leaves in the spine: hashes, sizes, exit status, duration and cost, from
    its body record; each only if the spine does not have it yet (``recorded``: the kinds
    under the effect's key), so a resume after a crash completes the accounting once."""
    if "handoff.finished" not in recorded:
        await call.append(HandoffFinished.model_validate(ended["finished"]))
    if ended["usage"] is not None and "usage" not in recorded:
        await call.append(Usage.model_validate(ended["usage"]))


def answer(ended: Mapping[str, Any]) -> str:
    """The call's result from its ``handoff`` body record: the report, or the code of how the
    runner failed."""
    runner, status = str(ended.get("runner")), ended.get("exit_status")
    report = str(ended.get("report") or "")
    if ended.get("timed_out"):
        limit = ended.get("timeout_s")
        allowed = f"{limit:g} s" if isinstance(limit, int | float) else "time"
        raise HzError(
            TIMED_OUT,
            f"the runner ran over its {allowed} and was stopped; what it wrote is in the turn body",
            runner,
        )
    if status != 0:
        words = (str(ended.get("stderr") or "").strip() or report).splitlines()
        last = words[-1][:WORDS_SHOWN] if words else "nothing on stderr"
        raise HzError(EXITED, f"the runner exited with status {status}: {last}", runner)
    return report or "(the runner reported nothing)"


async def recover(
    call: EffectCall, records: Sequence[Mapping[str, Any]], recorded: frozenset[str]
) -> str:
    """The result of a call whose runner had ended (``effect.done``) when a crash came before
    the result was recorded: rebuilt from its ``handoff`` body record, never run again; the
    ``handoff.finished`` and cost the crash kept from the spine are recorded first, so the
    spend caps count what the runner cost."""
    ended = next(
        (r for r in reversed(records) if r.get("type") == ENDED and r.get("call") == call.call),
        None,
    )
    if ended is None:  # the body is gone: nothing to rebuild it from
        raise HzError(INTERRUPTED, "the runner ended, but its report is gone", NAME)
    if "finished" in ended:  # an older hz's record has no accounting to rebuild
        await account(ended, call, recorded)
    return answer(ended)


def register(registry: ToolRegistry) -> None:
    registry.register(
        ToolSpec(
            name=NAME,
            capability=CAPABILITY,
            description=(
                "Hand a task to a coding agent (a configured runner such as Claude Code or Codex) "
                "working in a folder or repository your inputs name; you get its report back. "
                "It is never run twice: if it is cut short you are told so, and it may or may "
                "not have done its work."
            ),
            args=HandoffArgs,
            perform=hand_off,
            recover=recover,
            replay_safe=False,
        )
    )
