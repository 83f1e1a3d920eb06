"""issue 13 item 8: the connection caps leave descriptors for the kernel and for token holders."""

from __future__ import annotations

import pytest

from hz_kernel.config import DaemonSettings
from hz_kernel.daemon.connections import ACCEPT_BATCH, KERNEL_RESERVE_MIN, ConnectionLimits


@pytest.mark.parametrize("fd_limit", [256, 1024, 4096, 65_536])
def test_the_caps_fit_inside_the_descriptor_limit_with_a_reserve(fd_limit: int) -> None:
    in_use = 40
    limits = ConnectionLimits.derive(DaemonSettings(), fd_limit, in_use)
    assert limits.max_connections is not None
    worst = in_use + limits.max_connections + 2 * ACCEPT_BATCH
    assert worst <= fd_limit - max(KERNEL_RESERVE_MIN, fd_limit // 8)
    assert limits.max_unauthenticated <= limits.max_connections // 4
    assert limits.max_unauthenticated <= DaemonSettings().max_unauthenticated_connections


def test_under_ulimit_1024_most_connections_are_kept_for_token_holders() -> None:
    limits = ConnectionLimits.derive(DaemonSettings(), 1024, 20)
    assert limits.max_connections is not None
    assert limits.max_connections - limits.max_unauthenticated >= 512


def test_without_a_known_limit_only_the_settings_cap() -> None:
    settings = DaemonSettings(max_unauthenticated_connections=7, header_timeout_seconds=2)
    limits = ConnectionLimits.derive(settings, None, 0)
    assert limits.max_connections is None
    assert limits.max_unauthenticated == 7 and limits.header_timeout_s == 2
