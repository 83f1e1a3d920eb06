"""Team heinzels' shared state in the team's own git repository.

Receipts (``receipts``) pass a lint (``lint``) and wait in an outbox until
``state_branch`` commits them to the orphan branch ``hz/state``; leases
(``lease``) decide which home runs a team heinzel, with a fencing token.
Every git call goes through ``git``. See ``docs/team.md``.
"""
