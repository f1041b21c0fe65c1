"""ensure_staff (docs/operations.md, "Staff"): the first staff account, made once, with a
password printed once."""

import re
from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.factories import UserFactory


def ensure_staff() -> str:
    out = StringIO()
    call_command("ensure_staff", stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str:
    match = re.search(r"with password: (\S+)", output)
    assert match, output
    return match.group(1)


def test_ensure_staff_creates_admin_when_there_is_no_staff(db, anon):
    UserFactory()  # not staff

    output = ensure_staff()

    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff
    assert admin.is_superuser
    assert admin.is_active
    assert admin.password.startswith("argon2")
    password = printed_password(output)
    assert admin.check_password(password)
    login = anon.post("/v1/auth/login", {"username": "admin", "password": password}, format="json")
    assert login.status_code == 200, login.content


def test_ensure_staff_passwords_differ_between_installs(db):
    first = printed_password(ensure_staff())
    get_user_model().objects.all().delete()

    second = printed_password(ensure_staff())

    assert first != second
    assert len(second) >= 16


def test_ensure_staff_password_is_letters_and_digits_for_copying_off_a_terminal(db):
    passwords = set()
    for _ in range(12):
        passwords.add(printed_password(ensure_staff()))
        get_user_model().objects.all().delete()

    assert len(passwords) == 12
    assert all(re.fullmatch(r"[A-Za-z0-9]{24}", password) for password in passwords), passwords


def test_ensure_staff_does_nothing_the_second_time(db):
    first_output = ensure_staff()
    admin = get_user_model().objects.get(username="admin")

    second_output = ensure_staff()

    assert get_user_model().objects.count() == 1
    admin_again = get_user_model().objects.get(username="admin")
    assert admin_again.password == admin.password
    assert printed_password(first_output) not in second_output


def test_ensure_staff_does_nothing_when_staff_exist(staff):
    output = ensure_staff()

    assert not get_user_model().objects.filter(username="admin").exists()
    assert get_user_model().objects.count() == 1
    assert not re.search(r"password:\s*\S", output, re.IGNORECASE)
