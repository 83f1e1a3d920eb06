"""The kernel's command groups, one module per area; ``Kernel`` composes them."""
