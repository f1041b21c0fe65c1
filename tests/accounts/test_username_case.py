"""Usernames are unique whatever their case (docs/web.md, "Pages"), settled by the database's
unique index on the folded name (accounts migration 0003): registrations at once make one
account, and every surface that makes or renames an account says "That username is already
taken"."""

import threading
from functools import partial
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.test import Client

from accounts import admin as accounts_admin
from accounts import services
from core.exceptions import InvalidInput
from tests.factories import UserFactory
from tests.helpers import at_once

PASSWORD = "a long and unusual passphrase 7"
TAKEN = "That username is already taken"
VARIANTS = ["Quinn", "quinn", "QUINN", "qUinn", "quInn", "quiNn", "quinN", "QuInN"]
ADD = "/admin/auth/user/add/"


def accounts(name: str = "quinn") -> list[str]:
    return list(
        get_user_model().objects.filter(username__iexact=name).values_list("username", flat=True)
    )


@pytest.mark.usefixtures("transactional_db")
def test_registrations_at_once_make_one_account(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every registration has found the name free before any makes its account: what the
    # database alone can then settle.
    checked = threading.Barrier(len(VARIANTS))
    validate = services.validate_password

    def all_checked_first(*args: Any, **kwargs: Any) -> None:
        checked.wait(timeout=30)
        validate(*args, **kwargs)

    monkeypatch.setattr(services, "validate_password", all_checked_first)

    def register(username: str) -> Any:
        try:
            services.user_register(username=username, password=PASSWORD)
        except InvalidInput as exc:
            return exc.message, exc.errors
        return "made"

    results = at_once(*[partial(register, name) for name in VARIANTS])

    assert results.count("made") == 1, results
    taken = (f"Input could not be validated: {TAKEN}", {"username": [f"{TAKEN}."]})
    assert results.count(taken) == len(VARIANTS) - 1, results
    assert len(accounts()) == 1


def test_the_database_refuses_a_case_variant(db: None) -> None:
    UserFactory(username="quinn")
    with pytest.raises(IntegrityError), transaction.atomic():
        UserFactory(username="QUINN")
    UserFactory(username="quinny")  # only the whole name counts
    assert accounts() == ["quinn"]


def test_the_check_folds_case_as_the_index_does(db: None) -> None:
    """The services' check (username__iexact) compares the index's own expression, so the two
    agree on every name, and PostgreSQL answers the check from the index."""
    UserFactory(username="quinn")
    query = get_user_model().objects.filter(username__iexact="QUINN").values("pk")
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        sql, params = query.query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "auth_user_username_upper_uniq" in plan, plan


def test_the_registration_page_refuses_a_case_variant(db: None, settings: Any) -> None:
    settings.REGISTRATION = "open"
    UserFactory(username="quinn")
    response = Client().post(
        "/register/", {"username": "QUINN", "password": PASSWORD, "password_again": PASSWORD}
    )
    assert response.status_code == 200
    assert f"{TAKEN}." in response.content.decode()
    assert accounts() == ["quinn"]


# --- the admin ------------------------------------------------------------------------------


@pytest.fixture
def admin_client(db: None) -> Client:
    staff: Any = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    return client


def add(client: Client, username: str) -> Any:
    return client.post(
        ADD, {"username": username, "usable_password": "false", "password1": "", "password2": ""}
    )


def test_the_admin_adds_an_account_but_not_a_case_variant(admin_client: Client) -> None:
    assert add(admin_client, "quinn").status_code == 302
    response = add(admin_client, "QUINN")
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [f"{TAKEN}."]}
    assert accounts() == ["quinn"]


def test_the_admin_refuses_a_rename_to_a_case_variant(admin_client: Client) -> None:
    UserFactory(username="quinn")
    bob: Any = UserFactory(username="bob")
    change = f"/admin/auth/user/{bob.pk}/change/"
    data = {
        "username": "QUINN",
        "is_active": "on",
        "date_joined_0": "2024-01-01",
        "date_joined_1": "00:00:00",
    }
    response = admin_client.post(change, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"username": [f"{TAKEN}."]}
    assert accounts() == ["quinn"]
    # Its own name in another case is its own.
    assert admin_client.post(change, {**data, "username": "Bob"}).status_code == 302
    assert accounts("bob") == ["Bob"]


def test_the_admin_says_so_when_the_database_refuses(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made by someone else between the form's check and the save."""
    UserFactory(username="quinn")
    monkeypatch.setattr(accounts_admin, "username_taken", lambda **kwargs: False)
    response = add(admin_client, "QUINN")
    assert response.status_code == 302
    assert response["Location"] == ADD
    assert f"{TAKEN}." in admin_client.get(ADD).content.decode()
    assert accounts() == ["quinn"]


# --- the commands ---------------------------------------------------------------------------


def createsuperuser(username: str) -> None:
    call_command(
        "createsuperuser", username=username, email="", interactive=False, stdout=StringIO()
    )


def test_createsuperuser_refuses_a_case_variant(db: None) -> None:
    UserFactory(username="quinn")
    with pytest.raises(CommandError, match=f"^Error: {TAKEN}.$"):
        createsuperuser("QUINN")
    createsuperuser("robin")
    assert accounts() == ["quinn"]


def test_createsuperuser_says_so_when_the_database_refuses(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made by someone else between the command's check and its insert."""
    UserFactory(username="quinn")
    monkeypatch.setattr(
        "accounts.management.commands.createsuperuser.username_taken", lambda **kwargs: False
    )
    with pytest.raises(CommandError, match=f"^{TAKEN}.$"), transaction.atomic():
        createsuperuser("QUINN")
    assert accounts() == ["quinn"]


def test_ensure_staff_refuses_a_case_variant(db: None) -> None:
    UserFactory(username="Admin")  # not staff
    with pytest.raises(CommandError, match=f"^{TAKEN}: name another with --username$"):
        call_command("ensure_staff", stdout=StringIO())
    assert accounts("admin") == ["Admin"]
    call_command("ensure_staff", username="root", stdout=StringIO())
    assert get_user_model().objects.get(username="root").is_staff
