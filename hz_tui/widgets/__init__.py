"""The cockpit's widgets, one per module, each styled by the ``.tcss`` file beside it."""
