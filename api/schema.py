"""OpenAPI helpers: every operation documents each error status it can answer."""

from drf_spectacular.utils import OpenApiResponse

from api.errors import MESSAGES
from api.serializers import ErrorSerializer

_DESCRIPTIONS = {
    **MESSAGES,
    405: "Input could not be validated (or the method is not allowed)",
    409: "Lost to a concurrent request; nothing was changed: send it again",
    413: "Request body too large (limit: 1 MiB)",
    429: "Rate limit exceeded; see Retry-After",
    503: "The database cannot serve now (away, out of connections, too slow); see Retry-After",
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """Error responses for an operation; 401, 413, 415 and 429 can come from any of them, and
    every one answers 503 while the database cannot serve."""
    return {
        status: OpenApiResponse(ErrorSerializer, description=_DESCRIPTIONS[status])
        for status in sorted({*statuses, 503})
    }


# What any authenticated /v1/ operation can answer besides its own errors (the body limit
# applies to any request that carries a body, whatever its method).
AUTHENTICATED = (401, 405, 413, 429)
WITH_BODY = (413, 415)
# What a write answers when it loses to a concurrent one (the database's deadlock detector).
WRITE = (409,)
