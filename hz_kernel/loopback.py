"""Which addresses count as this machine's own: the daemon and ``hz serve`` bind nothing else."""

from __future__ import annotations

import ipaddress


def loopback_address(host: str) -> str | None:
    """``host`` as a loopback address to bind, or ``None`` when it names anything else.

    ``localhost`` is taken as IPv4's, since that is what every client here dials first.
    """
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return str(address) if address.is_loopback else None
