"""Enrolling and removing an account's second factors, and checking one at sign-in
(docs/factors.md).

django-otp keeps the authenticator apps (TOTP) and the recovery codes, django-otp-webauthn the
passkeys: every secret, code check, replay guard and throttle is theirs."""

from typing import Any

import django_otp
import segno
from django.db import transaction
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.exceptions import InvalidInput, NotFound
from factors.selectors import factor_models, has_factors

RECOVERY_CODES = 10
RECOVERY_NAME = "Recovery codes"
APP_NAME = "Authenticator app"
# Longer than any code: a recovery code is 8 letters and digits, an app's 6 digits.
CODE_MAX = 64
PASSKEY = "passkey"
APP = "app"


def code_typed(typed: str) -> str:
    """A code as people type it: spaces and dashes (an app shows "123 456", a recovery code may
    be copied as "abcd-efgh") dropped, letters in lower case."""
    return "".join(typed.split()).replace("-", "").lower()[:CODE_MAX]


def app_begin(*, user: Any) -> TOTPDevice:
    """A new authenticator app, unconfirmed until a code from it is given (app_confirm). An
    earlier unconfirmed one goes: only the last key shown can be confirmed."""
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user, confirmed=False).delete()
        return TOTPDevice.objects.create(user=user, name=APP_NAME, confirmed=False)


def app_pending(*, user: Any, device_id: Any) -> TOTPDevice:
    device = TOTPDevice.objects.filter(pk=device_id, user=user, confirmed=False).first()
    if device is None:
        raise NotFound("That set-up is over: start again")
    return device


def app_qr(device: TOTPDevice) -> str:
    """The key as a QR code an app scans, an SVG in a data: URL (the pages allow no inline
    markup beyond their own)."""
    return str(segno.make(device.config_url, error="m").svg_data_uri(scale=5, border=2))


def app_confirm(*, user: Any, device_id: Any, code: str) -> list[str]:
    """Confirm the app whose key was shown, by a code it shows now; the first factor of an
    account also makes its recovery codes, returned to be shown once."""
    device = app_pending(user=user, device_id=device_id)
    if django_otp.verify_token(user, device.persistent_id, code_typed(code)) is None:
        raise InvalidInput(
            "That code is not the one the app shows now: check the app's clock, and type the "
            "six digits shown for this account",
            errors={"code": ["That code is not the one the app shows now."]},
        )
    with transaction.atomic():
        TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
        return _recovery_codes_ensure(user)


def passkey_added(*, user: Any) -> list[str]:
    """After a passkey's registration: its recovery codes, if it is the account's first factor."""
    return _recovery_codes_ensure(user)


def _recovery_codes_ensure(user: Any) -> list[str]:
    if StaticDevice.objects.filter(user=user).exists():
        return []
    return recovery_codes_new(user=user)


def recovery_codes_new(*, user: Any) -> list[str]:
    """A new set of recovery codes, each good once, in place of any earlier ones; returned to be
    shown once (only django-otp's rows keep them, for the check)."""
    with transaction.atomic():
        StaticDevice.objects.filter(user=user).delete()
        device = StaticDevice.objects.create(user=user, name=RECOVERY_NAME, confirmed=True)
        codes = [StaticToken.random_token() for _ in range(RECOVERY_CODES)]
        StaticToken.objects.bulk_create([StaticToken(device=device, token=c) for c in codes])
    return codes


def factor_remove(*, user: Any, kind: str, factor_id: Any) -> None:
    """Remove one of the account's passkeys or apps; with the last, its recovery codes go too
    (they stand in for a factor, and none is left to stand in for)."""
    model = factor_models().get(kind)
    if model is None:
        raise NotFound("No such factor")
    with transaction.atomic():
        if not model.objects.filter(pk=factor_id, user=user, confirmed=True).delete()[0]:
            raise NotFound("No such factor: removed already?")
        if not has_factors(user=user):
            StaticDevice.objects.filter(user=user).delete()


OWN_FACTORS_HERE = "Your own factors are removed on your Account page"


def factors_remove_all(*, user: Any, acting_user: Any) -> int:
    """Every factor and recovery code of another account (staff, for a person who lost theirs,
    once they know it is them): its next sign-in takes the password alone. The number of
    factors removed."""
    if user.pk == acting_user.pk:
        raise InvalidInput(OWN_FACTORS_HERE, errors={"account": [OWN_FACTORS_HERE + "."]})
    with transaction.atomic():
        removed = sum(
            model.objects.filter(user=user).delete()[1].get(model._meta.label, 0)
            for model in factor_models().values()
        )
        StaticDevice.objects.filter(user=user).delete()
    return removed


def second_factor_check(*, user: Any, code: str) -> Device | None:
    """The app or recovery code that accepts `code`, used up if a recovery code; None when none
    does. Each device counts its own failures and refuses while they last (django-otp's
    throttle), beside the sign-in's own throttle."""
    typed = code_typed(code)
    if not typed:
        return None
    devices: list[Device] = [
        *TOTPDevice.objects.filter(user=user, confirmed=True),
        *StaticDevice.objects.filter(user=user, confirmed=True),
    ]
    for device in devices:
        verified = django_otp.verify_token(user, device.persistent_id, typed)
        if verified is not None:
            return verified
    return None
