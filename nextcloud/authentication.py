"""How the Nextcloud paths authenticate: HTTP Basic on every request, with the account's
password or an app password, and nothing else (docs/nextcloud.md, "Logging in").

No cookie is set and no session written: the apps send Basic every time, and the gpodder app's
remembered-credential cache keeps that cheap. The check is gpodder.authentication's, with its
UTF-8-then-Latin-1 decoding (AntennaPod sends Latin-1) and the shared login throttle.
"""

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from api.browsers import refuse_cross_site
from gpodder.authentication import basic_user


class NextcloudAuthentication(BaseAuthentication):
    """HTTP Basic only, never from a request another site made a browser send (403; no 401
    asks a browser for credentials: api.browsers). `request.app_password_id` names the app
    password used (None: the account's own password)."""

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, None] | None:
        refuse_cross_site(request)
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header[:6].lower() != "basic ":
            return None
        user, app_password_id = basic_user(request, header[6:])
        request.app_password_id = app_password_id  # type: ignore[attr-defined]
        return user, None

    def authenticate_header(self, request: Request) -> str:
        return f'Basic realm="{settings.GPODDER_REALM}"'
