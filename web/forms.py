"""The pages' forms: each checks what a person typed and names what is wrong, in their words."""

import unicodedata
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm

from accounts import activity
from core.exceptions import InvalidInput
from gpodder.models import Device
from gpodder.services import device_caption_checked
from imports.remote import OWN_NETWORK_LABEL


def _printable(value: str, label: str) -> str:
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
        raise forms.ValidationError(f"{label} must not contain control characters.")
    return value


class SignInForm(AuthenticationForm):
    """Django's sign-in form: the account's own password only, never an app password."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Wrong username or password.",
    }
    resumed = False  # the sign-in lifted the account's suspension for inactivity

    def clean(self) -> dict[str, Any]:
        # A suspended account's person comes back by signing in: its suspension is lifted
        # before Django's backend, which refuses an account that is off, checks the password.
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username and password:  # each as its field took it (no NUL, within its length)
            user = activity.suspended_user_by_password(username=username, password=password)
            if user is not None:
                self.resumed = activity.suspension_lift(user_id=user.pk)
        return super().clean()


class NewPasswordTwice(forms.Form):
    """A new password typed twice, as `password` and `password_again`: the two must match."""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("password") and data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data


class PasswordChoiceForm(NewPasswordTwice):
    """The person's own password, chosen after signing in with a one-time password staff
    handed over; `ticket` is what the sign-in gave (accounts.selectors.one_time_ticket), and the
    service checks the password by the validators, as registration does."""

    ticket = forms.CharField(widget=forms.HiddenInput, max_length=500)
    # Shown, and offered to password managers to save the new password under; never trusted.
    username = forms.CharField(widget=forms.HiddenInput, max_length=150, required=False)
    password = forms.CharField(
        label="Your new password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password", "autofocus": True}),
    )
    password_again = forms.CharField(
        label="New password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )


class PasswordChange(PasswordChangeForm):
    """Django's form, without its autofocus: on the account page it would scroll a new app
    password, shown once above it, out of sight."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["old_password"].widget.attrs.pop("autofocus", None)


class PodcastSearchForm(forms.Form):
    STATUSES = [
        ("subscribed", "Subscribed"),
        ("unsubscribed", "Unsubscribed"),
        ("not-deleted", "Subscribed and unsubscribed"),
        ("deleted", "Deleted"),
        ("all", "All, deleted included"),
    ]

    q = forms.CharField(label="Search", required=False, max_length=200, strip=True)
    status = forms.ChoiceField(label="Show", choices=STATUSES, required=False)

    def clean_q(self) -> str:
        return _printable(self.cleaned_data["q"], "The search")

    def clean_status(self) -> str:
        """The subscribed ones unless another is chosen: what a person follows now."""
        return self.cleaned_data["status"] or "subscribed"


class PodcastAddForm(forms.Form):
    """A podcast's feed address as a person pastes it; web.services.podcast_add reads it and
    words what is wrong with it."""

    url = forms.CharField(
        label="Add a podcast by its feed address",
        strip=True,
        help_text="The address of its RSS feed, for instance https://example.com/feed.xml.",
        error_messages={"required": "Paste the address of the podcast's feed."},
        widget=forms.TextInput(
            attrs={
                "inputmode": "url",
                "autocomplete": "off",
                "autocapitalize": "none",
                "spellcheck": "false",
                # One more than an address may have: a longer paste arrives too long and is
                # named so, where the limit itself would cut it silently into another address.
                "maxlength": settings.MAX_FEED_URL_LENGTH + 1,
            }
        ),
    )


class SubscriptionForm(forms.Form):
    subscribe = forms.BooleanField(required=False)


class DeviceForm(forms.Form):
    caption = forms.CharField(label="Name", required=False, max_length=255, strip=True)
    type = forms.ChoiceField(label="Type", choices=Device.Type.choices)

    def clean_caption(self) -> str:
        """The API's rule, checked by the service both go through."""
        try:
            return device_caption_checked(self.cleaned_data["caption"])
        except InvalidInput as exc:
            problems = (exc.errors or {}).get("caption") or [exc.message]
            raise forms.ValidationError([f"{p[:1].upper()}{p[1:]}." for p in problems]) from None


def _within(upload: Any, setting: str) -> Any:
    """An uploaded file, unless it is larger than the setting `setting` allows."""
    limit = getattr(settings, setting)
    if upload.size > limit:
        raise forms.ValidationError(
            f"The file is too large: the limit is {limit} bytes ({setting})."
        )
    return upload


class OpmlUploadForm(forms.Form):
    file = forms.FileField(label="OPML file")

    def clean_file(self) -> Any:
        return _within(self.cleaned_data["file"], "MAX_BODY_BYTES")


class HistoryFileForm(forms.Form):
    file = forms.FileField(
        label="History file",
        help_text=(
            "A gpodder.net episode-actions file, this server's own export "
            "(podcast-sync-data.json), or an OPML file."
        ),
    )

    def clean_file(self) -> Any:
        return _within(self.cleaned_data["file"], "IMPORT_MAX_FILE_BYTES")


class ServerImportForm(forms.Form):
    server = forms.CharField(
        label="Server address",
        max_length=2048,
        help_text="For instance https://gpodder.net, or your Nextcloud's address.",
        widget=forms.TextInput(attrs={"inputmode": "url", "autocomplete": "url"}),
    )
    username = forms.CharField(
        label="Username there",
        max_length=255,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "none"}),
    )
    password = forms.CharField(
        label="Password or app password there",
        max_length=1024,
        strip=False,
        help_text="Used for this import only: never stored, never shown again.",
        # Not this site's own password, which a browser would fill in for "current-password".
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    protocol = forms.ChoiceField(
        label="Its API",
        choices=[
            ("auto", "Find out"),
            ("gpodder", "gpodder.net API (gpodder.net, oPodSync, this server)"),
            ("nextcloud", "Nextcloud gPodder Sync"),
        ],
        initial="auto",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if settings.HOME_SERVER:  # the full layout reaches IMPORT_ALLOWED_NETWORKS alone
            self.fields["own_network"] = forms.BooleanField(
                label=OWN_NETWORK_LABEL,
                required=False,
                help_text=(
                    "Tick it to import from a server at a private address (192.168.x.x, 10.x.x.x,"
                    " a .lan or .local name): an old oPodSync, gpodder2go or Nextcloud at home."
                ),
            )


class AppPasswordForm(forms.Form):
    name = forms.CharField(
        label="App name",
        max_length=100,
        strip=True,
        help_text="For instance the app and the device it runs on: “AntennaPod on my phone”.",
    )


# The apps the connect page makes an app password for, by the name the password takes.
CONNECT_APPS = {
    "antennapod": "AntennaPod",
    "gpodder": "gPodder",
    "kasts": "Kasts",
    "cardo": "Cardo",
}


class ConnectAppForm(forms.Form):
    """The app a button of the connect page makes an app password for."""

    app = forms.ChoiceField(
        choices=list(CONNECT_APPS.items()),
        error_messages={
            "required": "Choose the app to make a password for.",
            "invalid_choice": "Choose one of the apps on this page.",
        },
    )


class PasswordConfirmForm(forms.Form):
    """The account's password, asked again before something that cannot be undone."""

    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password


class RegistrationForm(NewPasswordTwice):
    """A new account's username and password; and, where there is mail, the address that
    confirms it (accounts.addresses checks it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if settings.MAIL_ENABLED:
            self.fields["address"] = forms.CharField(
                label="Email address",
                max_length=254,
                strip=True,
                help_text="A link to confirm it goes there: your account works once it is opened.",
                error_messages={
                    "required": "Type your email address: the account is confirmed by it."
                },
                widget=forms.EmailInput(attrs={"autocomplete": "email"}),
            )

    username = forms.CharField(
        label="Username",
        max_length=150,
        widget=forms.TextInput(attrs={"autocomplete": "username"}),
        help_text="150 characters or fewer: letters, digits and @ . + - _ only.",
    )
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    password_again = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )


class ResetRequestForm(forms.Form):
    """The address a password reset link goes to; accounts.addresses checks it."""

    address = forms.CharField(
        label="Your account's email address",
        max_length=254,
        strip=True,
        error_messages={"required": "Type the email address of your account."},
        widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}),
    )


class ResetPasswordForm(NewPasswordTwice):
    """A new password chosen from a reset link; the service checks it by the validators."""

    # Shown, and offered to password managers to save the new password under; never trusted.
    username = forms.CharField(widget=forms.HiddenInput, max_length=150, required=False)
    password = forms.CharField(
        label="Your new password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password", "autofocus": True}),
    )
    password_again = forms.CharField(
        label="New password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )


class AddressForm(PasswordConfirmForm):
    """The account's email address, changed once its password is given again; empty removes
    it. accounts.addresses checks the address, password_form_status the password."""

    address = forms.CharField(
        label="Email address",
        max_length=254,
        strip=True,
        required=False,
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
    field_order = ["address", "password"]


class SecondStepForm(forms.Form):
    """The sign-in's second step: the code an authenticator app shows, or a recovery code."""

    code = forms.CharField(
        label="Code",
        max_length=64,
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "autofocus": True, "spellcheck": "false"}
        ),
        error_messages={"required": "Type the code your app shows, or a recovery code."},
    )


class AppConfirmForm(forms.Form):
    """An authenticator app's first code, confirming the key shown was added to it."""

    device = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    code = forms.CharField(
        label="The code the app shows now",
        max_length=64,
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "spellcheck": "false"}
        ),
        error_messages={"required": "Type the six digits the app shows for this account."},
    )
