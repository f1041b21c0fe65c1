"""Text that goes out in XML: the characters XML 1.0 allows, and nothing else; and text another
party sent, as the database stores it and a page shows it (`readable`).

XML 1.0 allows tab, newline, carriage return, U+0020 to U+D7FF, U+E000 to U+FFFD and U+10000 up.
One character outside that set (U+FFFF in a feed's title, say) makes a whole document ill-formed,
so that every reader, our own import included, refuses it: a feed's publisher could break each
subscriber's OPML export that way.
"""

import re
import unicodedata

# Surrogates never reach here as text a database stored, but a Python string may hold one.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def is_xml_text(text: str) -> bool:
    """Whether every character of `text` may appear in an XML 1.0 document."""
    return _NOT_XML.search(text) is None


def xml_text(text: str) -> str:
    """`text` without the characters XML 1.0 does not allow."""
    return _NOT_XML.sub("", text)


# What `readable` shows as U+FFFD: control and format characters, lone surrogates.
_UNREADABLE = frozenset({"Cc", "Cf", "Cs"})


def readable(text: str, max_length: int) -> str:
    """`text` as a person can read it and the database can store it, whoever wrote it (a
    server's status line, an app's field quoted in a reason): every control character (a NUL,
    which PostgreSQL's text refuses; bytes that were not UTF-8), format character and lone
    surrogate shown as U+FFFD, whitespace collapsed, at most `max_length` characters."""
    shown = "".join(
        " " if ch.isspace() else "\ufffd" if unicodedata.category(ch) in _UNREADABLE else ch
        for ch in text
    )
    shown = " ".join(shown.split())
    if len(shown) > max_length:
        shown = shown[: max_length - 1] + "\u2026"
    return shown
