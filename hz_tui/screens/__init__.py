"""The cockpit's screens, one per module, each styled by the ``.tcss`` file beside it."""
