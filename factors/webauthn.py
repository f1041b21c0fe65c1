"""Passkeys (WebAuthn) by django-otp-webauthn, fitted to this site (docs/factors.md, "Passkeys"):
a passkey belongs to the host name the browser used, it is a second step after the password
(never a sign-in alone), and the second step ends as the code's does (factors.signing)."""

from typing import Any

from django.http import HttpRequest
from django.http.request import split_domain_port
from django.shortcuts import resolve_url
from django_otp_webauthn import exceptions
from django_otp_webauthn.helpers import WebAuthnHelper
from django_otp_webauthn.views import (
    BeginCredentialAuthenticationView,
    BeginCredentialRegistrationView,
    CompleteCredentialAuthenticationView,
    CompleteCredentialRegistrationView,
)

from factors import services, signing


def rp_id(request: HttpRequest) -> str:
    """The relying party: the host name the browser asked for, without its port. A passkey
    made at nas.local works there only; one made at sync.example.org there only."""
    return split_domain_port(request.get_host())[0]


class Helper(WebAuthnHelper):
    def get_allowed_origins(self) -> list[str]:
        # The page's own origin: the host is one ALLOWED_HOSTS (or the home server's network)
        # let in, and the scheme what a trusted proxy said.
        return [f"{self.request.scheme}://{self.request.get_host()}"]


class _WaitingUser:
    """The account whose second step this browser is at, or the person signed in here."""

    request: HttpRequest

    def get_user(self) -> Any:
        waiting = signing.pending(self.request)
        if waiting is not None:
            return waiting[0]
        user = self.request.user
        return user if user.is_authenticated else None


class AuthenticationBegin(_WaitingUser, BeginCredentialAuthenticationView):
    pass


class AuthenticationComplete(_WaitingUser, CompleteCredentialAuthenticationView):
    """The passkey's answer checked (by the library, against the waiting account's passkeys):
    the second step passed, or, for a person signed in already, the session verified by it."""

    def complete_auth(self, device: Any) -> Any:
        waiting = signing.pending(self.request)
        if waiting is None:
            if not self.request.user.is_authenticated:
                raise exceptions.InvalidState()
            signing.session_verified(self.request, device)
            self.next_page = ""
            return device.user
        self.next_page = signing.sign_in_finish(self.request, waiting[0], device).get("next", "")
        return waiting[0]

    def get_success_url(self) -> str:
        return self.next_page or resolve_url("web:podcasts")


class RegistrationBegin(BeginCredentialRegistrationView):
    pass


class RegistrationComplete(CompleteCredentialRegistrationView):
    """A new passkey; the account's first factor also makes its recovery codes, which the
    Account page shows once."""

    def post(self, *args: Any, **kwargs: Any) -> Any:
        answer = super().post(*args, **kwargs)
        codes = services.passkey_added(user=self.request.user)
        if codes:
            self.request.session[signing.CODES_SHOWN_KEY] = codes
        return answer
