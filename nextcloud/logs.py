"""The Nextcloud login's poll token kept out of the logs (docs/nextcloud.md, "Logging in"): an app
that polls with `?token=` would otherwise leave, in every request line logged, the one value that
fetches the app password the flow gives. AntennaPod sends it in the body, which no log keeps.

Two loggers write request lines: gunicorn's access log (`AccessLogger`, config/gunicorn.py), and
the development server's `django.server` (`RequestLineFilter`, installed by NextcloudConfig).
"""

import logging
import re
from typing import Any
from urllib.parse import unquote_plus

from gunicorn.glogging import Logger

REDACTED = "[redacted]"

# A query parameter: at the start of a bare query string or after `?` or `&`, its name, `=` and
# its value, up to the next parameter, the fragment or the end of the request line's URI.
_PARAMETER = re.compile(r"(^|[?&])([^&=\s#?]*)=([^&\s#]*)")


def _hide(match: re.Match[str]) -> str:
    # The name as Django reads it (`tok%65n` is `token` too).
    if unquote_plus(match[2]).lower() != "token":
        return match[0]
    return f"{match[1]}{match[2]}={REDACTED}"


def redact(text: str) -> str:
    """`text` (a request line, a URL, a query string) with the value of every query parameter
    named `token` replaced by REDACTED."""
    if "=" not in text:
        return text
    return _PARAMETER.sub(_hide, text)


class RequestLineFilter(logging.Filter):
    """Redacts what a record says (the development server's request lines, `django.server`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in record.args)
        return True


class AccessLogger(Logger):
    """gunicorn's logger, whose access log (off unless asked for: `--access-logfile`) redacts
    every value a format may name: the request line, the query string, the Referer, the WSGI
    environment's RAW_URI and QUERY_STRING, whichever `access_log_format` uses."""

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        return {
            name: redact(value) if isinstance(value, str) else value
            for name, value in atoms.items()
        }
