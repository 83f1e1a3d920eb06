"""Fixtures shared by the end-to-end tests: the private tmux server."""

from tests.support.tmux import tmux  # noqa: F401 (the fixture, for every module here)
