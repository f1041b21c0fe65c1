"""What an account's second factors are, for its Account page and the People page."""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice


@dataclass
class Factors:
    """An account's confirmed factors: its passkeys, its authenticator apps (TOTP), and how many
    unused recovery codes it holds (None when it has none made)."""

    passkeys: list[Any] = field(default_factory=list)
    apps: list[Any] = field(default_factory=list)
    recovery_left: int | None = None

    @property
    def any(self) -> bool:
        """Whether a sign-in takes a second step. Recovery codes alone never count: they stand
        in for a lost passkey or app, and go with the last one removed."""
        return bool(self.passkeys or self.apps)


def passkey_model() -> Any:
    """django-otp-webauthn's passkeys, where PASSKEYS has them; None where not (its library is
    not even imported then)."""
    if not settings.PASSKEYS:
        return None
    from django_otp_webauthn.models import WebAuthnCredential

    return WebAuthnCredential


def factor_models() -> dict[str, Any]:
    """Each kind of factor, as the pages name it, and its model: "passkey", where there are
    passkeys, and "app"."""
    passkeys = passkey_model()
    return {**({"passkey": passkeys} if passkeys else {}), "app": TOTPDevice}


def factors_of(*, user: Any) -> Factors:
    passkeys = passkey_model()
    found = Factors(
        passkeys=list(passkeys.objects.filter(user=user, confirmed=True).order_by("created_at"))
        if passkeys
        else [],
        apps=list(TOTPDevice.objects.filter(user=user, confirmed=True).order_by("pk")),
    )
    if StaticDevice.objects.filter(user=user).exists():
        found.recovery_left = StaticToken.objects.filter(device__user=user).count()
    return found


def has_factors(*, user: Any) -> bool:
    return any(
        model.objects.filter(user=user, confirmed=True).exists()
        for model in factor_models().values()
    )


def factor_annotations() -> dict[str, Exists]:
    """For a query of accounts: `factor_<kind>`, whether the account has a confirmed factor of
    that kind, read in the account's own row (an index by user each)."""
    return {
        f"factor_{kind}": Exists(model.objects.filter(user_id=OuterRef("pk"), confirmed=True))
        for kind, model in factor_models().items()
    }


def factor_kinds(user: Any) -> tuple[str, ...]:
    """The kinds of factor an account read with factor_annotations has."""
    return tuple(kind for kind in factor_models() if getattr(user, f"factor_{kind}", False))
