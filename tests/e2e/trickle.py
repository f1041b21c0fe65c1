"""Clients that send their bodies a few bytes at a time (tests/e2e/test_slow_clients.py and the
home server's test): each connection sends its head at once, then its body at `rate` bytes a
second, from one thread, for as long as the `with` lasts."""

import contextlib
import socket
import threading
from collections.abc import Iterator


def trickled_head(path: str, length: int, content_type: str = "application/json") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


@contextlib.contextmanager
def trickling(port: int, heads: list[bytes], rate: int) -> Iterator[list[socket.socket]]:
    """The connections, each sending its head and then `rate` bytes a second of body (spaces,
    which JSON and a form take) in ten sends a second; a connection the server closed is left
    alone. They stop and close when the block ends."""
    socks = []
    for head in heads:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head)
        socks.append(sock)
    stop = threading.Event()

    def send() -> None:
        live = list(socks)
        while live and not stop.wait(0.1):
            for sock in list(live):
                try:
                    sock.send(b" " * (rate // 10), socket.MSG_DONTWAIT)
                except OSError:
                    live.remove(sock)

    thread = threading.Thread(target=send)
    thread.start()
    try:
        yield socks
    finally:
        stop.set()
        thread.join()
        for sock in socks:
            sock.close()
