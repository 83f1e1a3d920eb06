"""Real processes, real SIGKILL: the spine survives writers dying at any moment."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME, SpineWriter
from hz_kernel.vocabulary import StepDone


def _appending_child(heinzel_dir: Path, ack_fd: int) -> None:
    """Runs in the forked child: append forever, acknowledging each durable seq."""
    try:
        writer = SpineWriter.open(heinzel_dir)
        while True:
            event = writer.append(StepDone(step="think", output_hash="ab" * 32, output_size=123))
            os.write(ack_fd, f"{event.seq}\n".encode())
    finally:
        os._exit(1)


def test_sigkill_at_random_moments_never_loses_a_synced_line(tmp_path: Path) -> None:
    """Each writer is killed at a random moment after its first acknowledged line.

    Waiting for that first line (rather than a fixed time window) makes every
    round exercise a synced line on any machine, however loaded.
    """
    heinzel_dir = tmp_path / "hz-crash"
    rng = random.Random(20261130)
    acked: set[int] = set()
    for _ in range(100):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _appending_child(heinzel_dir, write_fd)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            first = pipe.readline()
            time.sleep(rng.uniform(0.0, 0.02))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            acked.update(int(line) for line in (first + pipe.read()).split() if line.isdigit())

        found = scan_file(heinzel_dir / SPINE_NAME)
        assert found.intact, found.breaks
        present = {e.seq for e in found.events}
        assert acked <= present

    with SpineWriter.open(heinzel_dir) as writer:
        final = writer.append(StepDone(step="finish"))
    found = scan_file(heinzel_dir / SPINE_NAME)
    assert found.intact and found.torn is None and found.last_seq == final.seq
    assert [e.seq for e in found.events] == list(range(1, final.seq + 1))
    assert len(acked) >= 100, "every writer acknowledged at least one line before its kill"


def test_two_processes_one_wins_the_lock_the_other_is_told_who(tmp_path: Path) -> None:
    heinzel_dir = tmp_path / "hz-lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from hz_kernel.store.spine import SpineWriter\n"
            "from hz_kernel.vocabulary import StepDone\n"
            "w = SpineWriter.open(Path(sys.argv[1]))\n"
            "w.append(StepDone(step='gather'))\n"
            "print('held', flush=True)\n"
            "time.sleep(30)\n",
            str(heinzel_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        second = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys\n"
                "from pathlib import Path\n"
                "from hz_kernel.store.locks import SpineBusy\n"
                "from hz_kernel.store.spine import SpineWriter\n"
                "try:\n"
                "    SpineWriter.open(Path(sys.argv[1]))\n"
                "except SpineBusy as exc:\n"
                "    print(exc.one_line()); sys.exit(3)\n",
                str(heinzel_dir),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 3
        assert second.stdout.startswith("HZS010: ")
        assert f"process {holder.pid}" in second.stdout
    finally:
        holder.kill()
        holder.wait()
    with SpineWriter.open(heinzel_dir) as writer:
        assert writer.last_seq == 1
