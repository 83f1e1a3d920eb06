"""The cockpit: a full-screen Textual terminal UI over one ``KernelClient``.

It reads the home's files (spines, by byte offset) to notice change and asks
the kernel everything else through the operations table; it never writes a
spine, a body or the index.
"""
