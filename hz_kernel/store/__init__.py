"""The durable session store: spines, turn bodies, inbox files and the derived index."""
