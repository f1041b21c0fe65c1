"""The poll token kept out of the logs (nextcloud.logs): gunicorn's access log, under gunicorn in
tests/e2e/test_access_log.py; here the redaction itself and the development server's log."""

import logging
from types import SimpleNamespace

import pytest

from nextcloud.logs import AccessLogger, redact


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "POST /index.php/login/v2/poll?token=SECRET HTTP/1.1",
            "POST /index.php/login/v2/poll?token=[redacted] HTTP/1.1",
        ),
        ("token=SECRET", "token=[redacted]"),  # a bare query string
        ("a=1&token=SECRET&b=2", "a=1&token=[redacted]&b=2"),
        ("/p?token=S1&token=S2", "/p?token=[redacted]&token=[redacted]"),
        ("/p?tok%65n=SECRET", "/p?tok%65n=[redacted]"),
        ("/p?TOKEN=SECRET#top", "/p?TOKEN=[redacted]#top"),
        ("https://h/p?x=token&token=SECRET", "https://h/p?x=token&token=[redacted]"),
        ("/p?token=", "/p?token=[redacted]"),
        # Anything else stays as it was.
        ("/p?tokens=1&mytoken=2&x=token", "/p?tokens=1&mytoken=2&x=token"),
        ("/login/flow/ABCDEF", "/login/flow/ABCDEF"),
        ("", ""),
    ],
)
def test_the_value_of_a_parameter_named_token_is_replaced(text: str, redacted: str) -> None:
    assert redact(text) == redacted


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_development_servers_request_lines_are_redacted() -> None:
    """`manage.py runserver` logs each request line on django.server."""
    logger = logging.getLogger("django.server")
    records = Records()
    logger.addHandler(records)
    try:
        # As django.core.servers.basehttp.WSGIRequestHandler.log_message logs it.
        logger.warning('"%s" %s %s', "POST /login/v2/poll?token=SECRET HTTP/1.1", "404", "2")
    finally:
        logger.removeHandler(records)
    assert records.lines == ['"POST /login/v2/poll?token=[redacted] HTTP/1.1" 404 2']


def test_every_atom_of_gunicorns_access_log_is_redacted() -> None:
    """Whatever access_log_format names: the request line, the query, the Referer, RAW_URI."""
    environ = {
        "REQUEST_METHOD": "POST",
        "RAW_URI": "/login/v2/poll?token=SECRET",
        "PATH_INFO": "/login/v2/poll",
        "QUERY_STRING": "token=SECRET",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_REFERER": "https://sync.example.com/login/v2/poll?token=SECRET",
    }
    request = SimpleNamespace(headers=[("REFERER", environ["HTTP_REFERER"])])
    response = SimpleNamespace(status="404 Not Found", sent=2, headers=[])
    took = SimpleNamespace(seconds=0, microseconds=1000)
    logger = AccessLogger.__new__(AccessLogger)  # atoms() needs none of its set-up

    atoms = logger.atoms(response, request, environ, took)

    assert not [name for name, value in atoms.items() if "SECRET" in str(value)]
    assert atoms["r"] == "POST /login/v2/poll?token=[redacted] HTTP/1.1"
    assert atoms["q"] == "token=[redacted]"
