"""Which way an amendment moves a contract's permissions, and the rule that a heinzel can't widen.

A heinzel may propose amendments from what it learned, but it never grants
itself more: anything that lets it read more, write more, spend more, wake
more often or changes who approves is a widening, and only the user may
write one (``HZC050``). This is the code that enforces that, not a prompt.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Literal

from hz_kernel.contracts.cron import compare_schedules
from hz_kernel.contracts.model import (
    CompiledContract,
    ContractError,
    FrozenModel,
    InputSpec,
    duration_seconds,
)

Author = Literal["heinzel", "user"]


class AmendmentCheck(FrozenModel):
    """What an amendment changes, sorted into widening, narrowing and neutral changes."""

    by: Author
    widens: tuple[str, ...]
    narrows: tuple[str, ...]
    neutral: tuple[str, ...]
    from_fingerprint: str
    to_fingerprint: str

    @property
    def widening(self) -> bool:
        return bool(self.widens)

    @property
    def changed(self) -> bool:
        return self.from_fingerprint != self.to_fingerprint


class _Changes:
    def __init__(self) -> None:
        self.widens: list[str] = []
        self.narrows: list[str] = []
        self.neutral: list[str] = []
        self.discovered: list[str] = []

    def either(self, widens: bool, change: str) -> None:
        (self.widens if widens else self.narrows).append(change)


def check_amendment(
    current: CompiledContract,
    proposed: CompiledContract,
    *,
    by: Author,
    zone: tzinfo | None = None,
    discovered: frozenset[str] = frozenset(),
) -> AmendmentCheck:
    """Classify ``proposed`` against ``current``; refuse any widening written by the heinzel.

    ``zone`` is the zone the home reads schedules in (None: unknown, judged
    as strictly as a zone with daylight saving). ``discovered`` names the
    proposed inputs that read a source hz discovered under one of the
    contract's own ``discover`` hints: adding one still widens (the user
    approves it), but the heinzel may propose it, as the user wrote the hint.
    """
    for field in ("name", "namespace"):
        before, after = getattr(current, field), getattr(proposed, field)
        if before != after:
            raise ContractError(
                "HZC051",
                f"an amendment may not change the {field} ({before} → {after}); "
                f"rename the heinzel instead",
                current.name,
            )
    changes = _Changes()
    _compare_requires(current, proposed, changes)
    _compare_inputs(current.hz.inputs, proposed.hz.inputs, changes, discovered)
    _compare_publishes(current, proposed, changes)
    _compare_agent(current, proposed, changes)
    _compare_approvers(current, proposed, changes)
    _compare_schedule(current, proposed, changes, zone)
    _compare_outputs(current, proposed, changes)
    _compare_text(current, proposed, changes)
    check = AmendmentCheck(
        by=by,
        widens=tuple(changes.widens),
        narrows=tuple(changes.narrows),
        neutral=tuple(changes.neutral),
        from_fingerprint=current.fingerprint,
        to_fingerprint=proposed.fingerprint,
    )
    forbidden = [change for change in check.widens if change not in changes.discovered]
    if by == "heinzel" and forbidden:
        raise ContractError(
            "HZC050",
            "a heinzel may not widen its own contract ("
            + "; ".join(forbidden)
            + "); the user has to write or approve this amendment",
            current.name,
        )
    return check


def _compare_requires(
    current: CompiledContract, proposed: CompiledContract, changes: _Changes
) -> None:
    before, after = set(current.hz.requires), set(proposed.hz.requires)
    for capability in sorted(after - before):
        changes.widens.append(f"requires: adds {capability}")
    for capability in sorted(before - after):
        changes.narrows.append(f"requires: drops {capability}")


def _compare_inputs(
    before: dict[str, InputSpec],
    after: dict[str, InputSpec],
    changes: _Changes,
    discovered: frozenset[str],
) -> None:
    for name in sorted(after.keys() - before.keys()):
        if name in discovered:
            change = f'inputs: adds "{name}", a discovered source'
            changes.discovered.append(change)
        else:
            change = f'inputs: adds "{name}"'
        changes.widens.append(change)
    for name in sorted(before.keys() - after.keys()):
        changes.narrows.append(f'inputs: drops "{name}"')
    for name in sorted(before.keys() & after.keys()):
        old, new = before[name], after[name]
        altered = [
            part
            for part in ("source", "method", "args", "facet")
            if getattr(old, part) != getattr(new, part)
        ]
        if altered:
            changes.widens.append(f'inputs: changes "{name}" ({", ".join(altered)})')
        old_every, new_every = _recheck_seconds(old), _recheck_seconds(new)
        if old_every != new_every:
            sooner = new_every < old_every
            how = "more" if sooner else "less"
            changes.either(
                sooner,
                f'inputs: rechecks "{name}" {how} often '
                f"({old.recheck or 'every tick'} → {new.recheck or 'every tick'})",
            )


def _recheck_seconds(spec: InputSpec) -> int:
    return duration_seconds(spec.recheck) if spec.recheck else 0


def _compare_publishes(
    current: CompiledContract, proposed: CompiledContract, changes: _Changes
) -> None:
    before = {(p.capability, p.asset) for p in current.hz.publishes}
    after = {(p.capability, p.asset) for p in proposed.hz.publishes}
    for capability, asset in sorted(after - before):
        changes.widens.append(f"publishes: adds {asset} ({capability})")
    for capability, asset in sorted(before - after):
        changes.narrows.append(f"publishes: drops {asset} ({capability})")


def _compare_agent(
    current: CompiledContract, proposed: CompiledContract, changes: _Changes
) -> None:
    old, new = current.hz.agent, proposed.hz.agent
    if new.max_usd != old.max_usd:
        rises = new.max_usd > old.max_usd
        verb = "rises" if rises else "lowers"
        changes.either(rises, f"agent.max_usd: {verb} {old.max_usd:g} → {new.max_usd:g}")
    if new.max_tokens != old.max_tokens:
        rises = new.max_tokens > old.max_tokens
        verb = "rises" if rises else "lowers"
        changes.either(rises, f"agent.max_tokens: {verb} {old.max_tokens} → {new.max_tokens}")
    if new.model != old.model:
        before, after = old.model or "the home's default", new.model or "the home's default"
        changes.widens.append(f"agent.model: changes {before} → {after}")


def _compare_approvers(
    current: CompiledContract, proposed: CompiledContract, changes: _Changes
) -> None:
    old, new = current.hz.approvers, proposed.hz.approvers
    if old != new:
        changes.widens.append(f"approvers: changes {', '.join(old)} → {', '.join(new)}")


def _compare_schedule(
    current: CompiledContract, proposed: CompiledContract, changes: _Changes, zone: tzinfo | None
) -> None:
    old, new = current.hz.schedule, proposed.hz.schedule
    if old is None and new is not None:
        changes.widens.append(f"schedule: adds {new}")
    elif old is not None and new is None:
        changes.narrows.append(f"schedule: drops {old}")
    elif old is not None and new is not None:
        change = compare_schedules(old, new, zone=zone)
        if change.verdict == "widens":
            changes.widens.append(
                f"schedule: fires when it did not before ({old} → {new}: {change.why})"
            )
        elif change.verdict == "narrows":
            changes.narrows.append(f"schedule: fires only at some of its times ({old} → {new})")
    old_mode, new_mode = current.hz.render_on_schedule, proposed.hz.render_on_schedule
    if old_mode != new_mode:
        changes.either(new_mode == "always", f"render_on_schedule: {old_mode} → {new_mode}")


def _compare_outputs(
    current: CompiledContract, proposed: CompiledContract, changes: _Changes
) -> None:
    before, after = current.hz.outputs, proposed.hz.outputs
    for name in sorted(after.keys() - before.keys()):
        valid_for = after[name].valid_for
        if valid_for:
            changes.widens.append(f'outputs: adds "{name}", stale after {valid_for}')
        else:
            changes.neutral.append(f'outputs: adds "{name}"')
    for name in sorted(before.keys() - after.keys()):
        changes.narrows.append(f'outputs: drops "{name}"')
    for name in sorted(before.keys() & after.keys()):
        old, new = before[name].valid_for, after[name].valid_for
        if old == new:
            continue
        old_seconds = duration_seconds(old) if old else None
        new_seconds = duration_seconds(new) if new else None
        sooner = new_seconds is not None and (old_seconds is None or new_seconds < old_seconds)
        changes.either(
            sooner, f'outputs: "{name}" goes stale after {new or "never"} (was {old or "never"})'
        )


def _compare_text(current: CompiledContract, proposed: CompiledContract, changes: _Changes) -> None:
    if current.description != proposed.description:
        changes.neutral.append("description: changes")
    if " ".join(current.body.preamble.split()) != " ".join(proposed.body.preamble.split()):
        changes.neutral.append("body: changes the text before the sections")
    old = {s.title: " ".join(s.text.split()) for s in current.body.sections}
    new = {s.title: " ".join(s.text.split()) for s in proposed.body.sections}
    for title in new.keys() - old.keys():
        changes.neutral.append(f"body: adds ### {title}")
    for title in old.keys() - new.keys():
        changes.neutral.append(f"body: drops ### {title}")
    for title in old.keys() & new.keys():
        if old[title] != new[title]:
            changes.neutral.append(f"body: changes ### {title}")
    changes.neutral.sort()
