"""The scan's fast path for whole spines finds exactly what the full decode finds.

A reindex reads every line through ``_events_fast``; any line it does not
expect sends the spine to the full decode, which sorts the damage. Whatever
the spine holds, both must give the same events, breaks and chain end.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hz_kernel.store import scan as scan_module
from hz_kernel.store.envelope import GENESIS, encode, line_hash
from hz_kernel.store.scan import SpineScan, scan
from hz_kernel.vocabulary import (
    ChainAccepted,
    DraftPlaced,
    HeinzelCreated,
    StepDone,
    TurnFinished,
    TurnStarted,
)

_PAYLOADS = (
    HeinzelCreated(name="weekly"),
    TurnStarted(cause="schedule", keys=["k"], contract_version=1),
    StepDone(step="think", output_hash="b" * 64, output_size=10, tokens=9),
    StepDone(step="outcome", outcome="draft", report="drafted"),
    DraftPlaced(key="d", asset="doc:a.md", hash="d" * 64, size=3, contract_version=1),
    TurnFinished(disposition="drafted", causes=["schedule"], usd=0.25, report="done"),
    ChainAccepted(breaks=[{"offset": 0, "problem": "edited"}]),
)


def _spine(kinds: list[int]) -> list[bytes]:
    lines, prev = [], GENESIS
    for seq, at in enumerate(kinds, 1):
        line = encode(_PAYLOADS[at], seq=seq, prev=prev, turn="T" if at else None, key=None)
        lines.append(line)
        prev = line_hash(line)
    return lines


def _rechained(lines: list[bytes]) -> list[bytes]:
    out, prev = [], GENESIS
    for line in lines:
        envelope = orjson.loads(line)
        envelope["prev"] = prev
        out.append(orjson.dumps(envelope))
        prev = line_hash(out[-1])
    return out


def _damage(lines: list[bytes], how: str, at: int) -> list[bytes]:
    """``lines`` with one kind of damage at line ``at`` (or none)."""
    lines = list(lines)
    at %= len(lines)
    envelope = orjson.loads(lines[at])
    if how == "edit":
        lines[at] = lines[at].replace(b'"T"', b'"U"').replace(b"weekly", b"daily")
    elif how == "delete" and len(lines) > 1:
        del lines[at]
    elif how == "swap" and len(lines) > 1:
        other = (at + 1) % len(lines)
        lines[at], lines[other] = lines[other], lines[at]
    elif how == "garbage":
        lines.insert(at, b"not json")
    elif how == "array":
        lines.insert(at, b"[1, 2]")
    elif how == "mistyped":
        envelope["data"]["report" if envelope["kind"] == "step.done" else "name"] = 7
        lines[at] = orjson.dumps(envelope)
        lines = _rechained(lines)
    elif how == "bool-seq":
        envelope["seq"] = True
        lines[at] = orjson.dumps(envelope)
        lines = _rechained(lines)
    elif how == "reordered-keys":
        lines[at] = orjson.dumps(dict(reversed(envelope.items())))
        lines = _rechained(lines)
    elif how == "ts":
        envelope["ts"] += "0"
        lines[at] = orjson.dumps(envelope)
        lines = _rechained(lines)
    elif how == "renumbered":
        envelope["seq"] += 5
        lines[at] = orjson.dumps(envelope)
        lines = _rechained(lines)
    return lines


def _found(result: SpineScan) -> tuple[object, ...]:
    return (
        result.events,
        result.breaks,
        result.accepted,
        result.torn,
        result.last_seq,
        result.last_hash,
        result.last_offset,
        result.lines,
    )


_HOWS = (
    "none",
    "edit",
    "delete",
    "swap",
    "garbage",
    "array",
    "mistyped",
    "bool-seq",
    "reordered-keys",
    "renumbered",
    "ts",
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, len(_PAYLOADS) - 1), min_size=1, max_size=12),
    st.sampled_from(_HOWS),
    st.integers(0, 20),
    st.sampled_from([b"", b'{"v":1,"se']),
)
def test_the_fast_path_finds_what_the_full_decode_finds(
    kinds: list[int], how: str, at: int, tail: bytes
) -> None:
    data = b"".join(line + b"\n" for line in _damage(_spine(kinds), how, at)) + tail
    fast = scan(data, Path("spine"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan_module, "_events_fast", lambda lines: None)
        full = scan(data, Path("spine"))
    assert _found(fast) == _found(full)


def test_a_whole_spine_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The intact case, the one a reindex meets, never reaches the full decode."""
    data = b"".join(line + b"\n" for line in _spine(list(range(len(_PAYLOADS)))))
    monkeypatch.setattr(scan_module, "_decode", None)
    found = scan(data, Path("spine"))
    assert found.intact and len(found.events) == len(_PAYLOADS)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([0, 8, 97]),
    st.lists(st.integers(0, len(_PAYLOADS) - 1), min_size=1, max_size=12),
    st.sampled_from(_HOWS),
    st.integers(0, 120),
    st.sampled_from([b"", b'{"v":1,"se']),
)
def test_verification_calls_a_chain_whole_only_when_the_full_decode_does(
    whole: int, kinds: list[int], how: str, at: int, tail: bytes
) -> None:
    """``verify``'s fast path reads only each line's place, ``seq`` and ``prev``: it finds the
    chain's breaks and end as the full decode does (seqs of one to three digits), and
    leaves what a line holds (its types) to the index fold, as ``scan`` says."""
    lines = _damage(_spine([2] * whole + kinds), how, at)
    data = b"".join(line + b"\n" for line in lines) + tail
    quick = scan(data, Path("spine"), collect=False)
    full = scan(data, Path("spine"))

    def chain(result: SpineScan) -> list[object]:
        return [b for b in result.breaks if b.problem != "mistyped"]

    assert chain(quick) == chain(full)
    assert quick.accepted == full.accepted
    assert (quick.torn, quick.last_seq, quick.last_hash, quick.last_offset, quick.lines) == (
        full.torn,
        full.last_seq,
        full.last_hash,
        full.last_offset,
        full.lines,
    )


def test_verifying_a_whole_spine_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """An intact spine past a hundred lines (seqs of three digits) is verified without
    decoding a line."""
    kinds = [at for at in range(len(_PAYLOADS)) if _PAYLOADS[at].kind != "chain.accepted"]
    data = b"".join(line + b"\n" for line in _spine(kinds * 20))
    full = scan(data, Path("spine"))
    monkeypatch.setattr(scan_module, "_decode", None)
    quick = scan(data, Path("spine"), collect=False)
    assert quick.intact and quick.lines == full.lines == len(kinds) * 20
    assert (quick.last_seq, quick.last_hash, quick.last_offset) == (
        full.last_seq,
        full.last_hash,
        full.last_offset,
    )
