"""A tiny TCP port forward for tests: what ``ssh -L PORT:127.0.0.1:TARGET`` does, without ssh.

It listens on a port of its own on 127.0.0.1 and copies bytes both ways to
the target port, so a client's ``Host`` header names the forward's port,
not the daemon's: exactly what a remote cockpit sends through ``ssh -L``.
Like ``ssh -L``, it outlives its target: while nothing listens there, a
connection is accepted and closed at once, and a target that listens again
(a daemon restarted on the same port) is reached through the same forward.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class PortForward:
    """127.0.0.1:``port`` → 127.0.0.1:``target``, one pair of threads per connection."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
