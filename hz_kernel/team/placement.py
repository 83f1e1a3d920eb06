"""Whether this home can place a team heinzel in a team: it needs a roster handle and a team
repository (the contract's ``hz.team.repo``, else the home's ``[team] repo``).

The tick refuses to run a team heinzel that cannot be placed; ``hz new`` and
``hz approve`` only warn, since the user may set ``[team]`` afterwards.
"""

from __future__ import annotations

from hz_kernel.config import TeamSettings
from hz_kernel.errors import HzError

NO_HANDLE = "HZS113"
NO_REPO = "HZS114"


def unplaced(name: str, contract_repo: str | None, settings: TeamSettings) -> list[HzError]:
    """What keeps the team heinzel ``name`` from being placed, one coded error each."""
    missing: list[HzError] = []
    if settings.handle is None:
        message = (
            "a team heinzel needs this home's roster handle: set [team] handle (like "
            'handle = "priya") in hz.toml'
        )
        missing.append(HzError(NO_HANDLE, message, name))
    if (contract_repo or settings.repo) is None:
        message = (
            "a team heinzel needs a team repository: set hz.team.repo in its contract "
            "or [team] repo in hz.toml"
        )
        missing.append(HzError(NO_REPO, message, name))
    return missing
