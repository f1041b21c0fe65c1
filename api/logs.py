"""Log records of requests, as an operator wants to read them."""

import logging


class ExpectedUnauthorized(logging.Filter):
    """Django logs every 4xx answer as a warning. A 401 is how a gpodder app's every sync starts
    (it sends its credentials once asked), so that one is an ordinary event: logged at DEBUG,
    that is, not at all at the default LOG_LEVEL."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) != 401:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


class OneLine(logging.Filter):
    """A refused request (a Host not allowed, say) is the client's mistake: one warning line,
    not an error with the server's traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("django.security."):
            return True
        record.exc_info, record.exc_text = None, None
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
