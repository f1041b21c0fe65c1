"""A real SMTP server for the tests (aiosmtpd), in a thread of the test process, on a loopback
port of its own: the service's mail goes out through Django's SMTP backend, as deployed, and is
read back here as the mailbox would read it."""

import email
import email.policy
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlsplit

from aiosmtpd.controller import Controller

from tests.servers import free_port


@dataclass
class Mailbox:
    """What the server received, and how it answers the next recipients: `refuse` is an SMTP
    reply ("550 5.1.1 No such user") given to each RCPT while it is set."""

    received: list[EmailMessage] = field(default_factory=list)
    refuse: str = ""
    port: int = 0
    _arrived: threading.Condition = field(default_factory=threading.Condition)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if self.refuse:
            return self.refuse
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        with self._arrived:
            self.received.append(message)
            self._arrived.notify_all()
        return "250 Message accepted"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        """The first `count` mails, once they have arrived; AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"{len(self.received)} of {count} mails arrived in {timeout} s"
                self._arrived.wait(left)
            return list(self.received[:count])


@contextmanager
def smtp_server() -> Iterator[Mailbox]:
    box = Mailbox(port=free_port())
    controller = Controller(box, hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


def body(message: EmailMessage, subtype: str = "plain") -> str:
    """The mail's text part, or its HTML part (`subtype` "html")."""
    part = message.get_body(preferencelist=(subtype,))
    assert part is not None, f"no text/{subtype} part"
    return str(part.get_content())


def links(message: EmailMessage) -> list[str]:
    """The links of the plain-text part to a page, in order (not the site's own address)."""
    words = body(message).split()
    return [
        word
        for word in words
        if word.startswith(("http://", "https://")) and urlsplit(word).path not in ("", "/")
    ]
