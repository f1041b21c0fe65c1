"""The passkeys' ceremonies: JSON posted by django-otp-webauthn's scripts on the sign-in's second
step and the Account page. The namespace is the library's, whose template tags reverse it."""

from django.urls import path
from django.views.i18n import JavaScriptCatalog

from factors import webauthn

app_name = "otp_webauthn"

urlpatterns = [
    path(
        "registration/begin/",
        webauthn.RegistrationBegin.as_view(),
        name="credential-registration-begin",
    ),
    path(
        "registration/complete/",
        webauthn.RegistrationComplete.as_view(),
        name="credential-registration-complete",
    ),
    path(
        "authentication/begin/",
        webauthn.AuthenticationBegin.as_view(),
        name="credential-authentication-begin",
    ),
    path(
        "authentication/complete/",
        webauthn.AuthenticationComplete.as_view(),
        name="credential-authentication-complete",
    ),
    # The scripts' messages, in English only.
    path(
        "messages.js",
        JavaScriptCatalog.as_view(packages=["django_otp_webauthn"]),
        name="js-i18n-catalog",
    ),
]
