"""OpenAPI helpers: every operation documents each error status it can answer."""

from typing import Any

from django.conf import settings
from drf_spectacular.contrib.rest_framework_simplejwt import SimpleJWTScheme
from drf_spectacular.utils import OpenApiResponse

from api.errors import MESSAGES
from api.serializers import ErrorSerializer

_DESCRIPTIONS = {
    **MESSAGES,
    405: "Input could not be validated (or the method is not allowed)",
    409: "Lost to a concurrent request; nothing was changed: send it again",
    413: "Request body too large (limit: 1 MiB)",
    429: "Rate limit exceeded; see Retry-After",
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """Error responses for an operation; 401, 413, 415 and 429 can come from any of them."""
    return {
        status: OpenApiResponse(ErrorSerializer, description=_DESCRIPTIONS[status])
        for status in sorted(set(statuses))
    }


class BearerAuthenticationScheme(SimpleJWTScheme):
    """Documents our bearer authentication as the simplejwt scheme it extends."""

    target_class = "accounts.authentication.BearerAuthentication"


# What any authenticated /v1/ operation can answer besides its own errors (the body limit
# applies to any request that carries a body, whatever its method).
AUTHENTICATED = (401, 405, 413, 429)
WITH_BODY = (413, 415)
# What a write answers when it loses to a concurrent one (the database's deadlock detector).
WRITE = (409,)


def strict_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular hook: say in the document what request bodies refuse.

    A PATCH without a body, with no field or with an unknown one is a 405 (product.md section 7),
    and so is an add of more entries than the limit, or an OPML import without a document; a
    document that allowed them would promise what the server refuses.
    """
    # Indexed directly: a renamed component must fail here, not quietly lose its constraints.
    schemas = result["components"]["schemas"]
    schemas["AddRequestRequest"]["properties"]["subscriptions"]["maxItems"] = (
        settings.MAX_ADD_ENTRIES
    )
    schemas["PatchedUpdateRequestRequest"].update(additionalProperties=False, minProperties=1)
    result["paths"]["/v1/subscriptions/{guid}"]["patch"]["requestBody"]["required"] = True
    # An OPML import without a document is a 405, like any body that is not OPML.
    result["paths"]["/v1/subscriptions.opml"]["post"]["requestBody"]["required"] = True
    return result
