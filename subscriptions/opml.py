"""OPML documents (docs/api.md, "OPML import and export"): reading an app's export safely,
writing the user's.

Reading goes through defusedxml with DTDs forbidden, so a billion-laughs bomb or an external
entity (`file:///etc/passwd`) is refused before anything is expanded or fetched. Writing goes
through xml.etree, which escapes every attribute value, with only the characters XML allows.
"""

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from core.exceptions import InvalidInput
from core.text import xml_text

CONTENT_TYPE = "text/x-opml; charset=utf-8"


@dataclass(frozen=True)
class OpmlFeed:
    """A feed outline: its `xmlUrl`, and its title when the document or the server knows one."""

    url: str
    title: str | None = None


def _attribute(element: ET.Element, name: str) -> str | None:
    """An attribute by name in any case: some apps write `xmlurl` or `XMLURL`."""
    value = element.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    return next((v for k, v in element.attrib.items() if k.lower() == lowered), None)


def opml_parse(document: bytes) -> list[OpmlFeed]:
    """Every feed outline of an OPML document, nested ones included, in document order.

    An outline without `xmlUrl` is a category (or a link) and is walked into, not added. Raises
    InvalidInput (405) for anything that is not a well-formed OPML document without a DTD.
    """
    try:
        # forbid_dtd: no DOCTYPE at all, so no entity of any kind can be declared.
        root = fromstring(document, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise InvalidInput("OPML must not contain a DTD or entities") from exc
    except (ET.ParseError, ValueError, LookupError) as exc:
        # ParseError for syntax and encoding errors; the others for odd declared encodings.
        raise InvalidInput(f"not well-formed XML ({exc})") from exc
    if root.tag != "opml":
        raise InvalidInput("not an OPML document: the root element must be <opml>")
    body = root.find("body")
    if body is None:
        raise InvalidInput("not an OPML document: it has no <body>")
    feeds = []
    for outline in body.iter("outline"):
        url = _attribute(outline, "xmlUrl")
        if url is None:
            continue
        title = _attribute(outline, "title") or _attribute(outline, "text")
        # Pretty-printed attributes may carry surrounding blanks; a URL never has them.
        feeds.append(OpmlFeed(url=url.strip(), title=title or None))
    return feeds


def opml_render(*, feeds: Iterable[OpmlFeed], created: datetime, owner: str = "") -> bytes:
    """An OPML 2.0 document of `feeds`, UTF-8 encoded.

    OPML requires `text` on every outline: the title when known, else the feed URL.
    """
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = "Podcast subscriptions"
    ET.SubElement(head, "dateCreated").text = format_datetime(created, usegmt=True)
    if owner:
        ET.SubElement(head, "ownerName").text = xml_text(owner)
    body = ET.SubElement(root, "body")
    for feed in feeds:
        # Stored before the rules kept such characters out (core.text): one would make the
        # whole document unreadable, to our own import too.
        url, title = xml_text(feed.url), xml_text(feed.title or "")
        outline = ET.SubElement(body, "outline", type="rss", text=title or url)
        if title:
            outline.set("title", title)
        outline.set("xmlUrl", url)
    ET.indent(root)
    # Our own declaration: ElementTree's uses single quotes, which some importers mishandle.
    document = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{document}\n'.encode()
