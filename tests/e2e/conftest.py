"""Fixtures shared by the end-to-end tests: the private tmux server."""

from tests.e2e.test_cockpit_tmux import tmux  # noqa: F401 (the fixture, for the other modules)
