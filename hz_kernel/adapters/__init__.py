"""Adapters: where hz meets the world outside its home (documents, sources, models)."""
