"""The OpenAPI declarations of /v1/auth/* and of the bearer authentication scheme."""

from drf_spectacular.contrib.rest_framework_simplejwt import SimpleJWTScheme
from drf_spectacular.utils import extend_schema

from accounts.serializers import (
    AccessTokenSerializer,
    LoginResponseSerializer,
    LoginSerializer,
    RefreshSerializer,
)
from api.schema import WITH_BODY, WRITE, errors


class BearerAuthenticationScheme(SimpleJWTScheme):
    """Documents our bearer authentication as the simplejwt scheme it extends."""

    target_class = "accounts.authentication.BearerAuthentication"


token_login = extend_schema(
    request=LoginSerializer,
    responses={200: LoginResponseSerializer, **errors(401, 405, 429, *WITH_BODY, *WRITE)},
    summary="Log in with a username and password",
)
token_refresh = extend_schema(
    request=RefreshSerializer,
    responses={200: AccessTokenSerializer, **errors(401, 405, 429, *WITH_BODY, *WRITE)},
    summary="Exchange a refresh token for new tokens",
)
token_logout = extend_schema(
    request=RefreshSerializer,
    responses={204: None, **errors(401, 405, 429, *WITH_BODY, *WRITE)},
    summary="Revoke a refresh token",
)
