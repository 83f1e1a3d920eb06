"""The detached kernel: a local daemon serving the operations table over HTTP and SSE."""
