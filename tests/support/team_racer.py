"""A home racing for a lease: one line of stdin per round, one JSON line out.

Run as ``python -m tests.support.team_racer HOME TEAM HANDLE``; each line is
``<ISO instant> <round>`` and the home races as ``<HANDLE>-<round>``, so in
every round both racers are strangers to the expired lease and may only
take it over. The race test starts two and sends both the same line at once.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

import orjson

from hz_kernel.errors import HzError
from hz_kernel.team.lease import acquire_or_renew
from hz_kernel.team.repo import TeamRepo
from tests.support.team import HEINZEL


def main() -> None:
    home, team, handle = sys.argv[1:4]
    repo = TeamRepo(Path(home), team)
    repo.ensure()
    print("ready", flush=True)
    for line in sys.stdin:
        instant, round_ = line.split()
        now, who = datetime.fromisoformat(instant), f"{handle}-{round_}"
        try:
            outcome = acquire_or_renew(repo, HEINZEL, handle=who, now=now, ttl=timedelta(minutes=1))
            answer = {
                "how": outcome.how,
                "holder": outcome.lease.holder,
                "token": outcome.lease.token,
            }
        except HzError as exc:
            answer = {"error": exc.one_line()}
        print(orjson.dumps(answer).decode(), flush=True)


if __name__ == "__main__":
    main()
