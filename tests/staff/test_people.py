"""The People page (docs/operations.md, "The admin"): who sees it, the accounts listed and paged
in a bounded number of queries, and its three actions, each a POST with its CSRF token, asked
first where it cannot be undone: add a member (a one-time password shown once), a new one-time
password, an account turned off and on again. Bad input is named, and changes nothing."""

import re
import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts import selectors as account_selectors
from deletions.models import AccountDeletion
from gpodder.models import Device
from staff.selectors import PEOPLE_PER_PAGE
from tests.factories import UserFactory
from tests.web.helpers import PASSWORD

PEOPLE = "/admin/people/"
ADD = "/admin/people/add/"
ONE_TIME = re.compile(r"<code>([a-z2-9]{4}(?:-[a-z2-9]{4}){3})</code>")


def users() -> Any:
    return get_user_model().objects


def password_of(path: str, user_id: Any) -> str:
    return f"{PEOPLE}{user_id}/{path}/"


def shown_password(response: Any) -> str:
    found = ONE_TIME.search(response.content.decode())
    assert found, response.content.decode()[:2000]
    return found.group(1)


def staff_with(*permissions: str) -> Client:
    """Signed in as a staff account (not a superuser) with these permissions of the users."""
    helper: Any = UserFactory(is_staff=True)
    for codename in permissions:
        helper.user_permissions.add(
            Permission.objects.get(content_type__app_label="auth", codename=codename)
        )
    client = Client()
    client.force_login(helper)
    return client


# --- Who sees it ----------------------------------------------------------------------------


def test_signed_out_people_are_sent_to_the_admin_sign_in(db: None) -> None:
    for path in (PEOPLE, ADD, password_of("off", 1), password_of("password", 1)):
        response = Client().get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/admin/login/?next="), path


def test_an_account_that_is_not_staff_never_sees_the_list(page: Client, person: Any) -> None:
    UserFactory(username="secret-name")
    response = page.get(PEOPLE, follow=True)
    assert response.redirect_chain[0][0].startswith("/admin/login/")
    assert response.status_code == 403
    assert "secret-name" not in response.content.decode()


def test_an_account_that_is_not_staff_changes_nothing(page: Client, person: Any) -> None:
    target: Any = UserFactory(username="target", with_password=PASSWORD)
    for path in (ADD, password_of("password", target.pk), password_of("off", target.pk)):
        response = page.post(path, {"username": "sneaky", "confirmed": "yes"})
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")
    assert not users().filter(username="sneaky").exists()
    target.refresh_from_db()
    assert target.is_active
    assert target.check_password(PASSWORD)


def test_staff_without_the_users_permissions_are_told_and_see_no_name(db: None) -> None:
    UserFactory(username="secret-name")
    client = staff_with()
    response = client.get(PEOPLE)
    assert response.status_code == 403
    body = response.content.decode()
    assert "secret-name" not in body
    assert "a superuser may" in body
    assert client.post(ADD, {"username": "sneaky"}).status_code == 403
    assert not users().filter(username="sneaky").exists()


def test_staff_who_may_view_but_not_change_see_the_list_and_no_action(db: None) -> None:
    target: Any = UserFactory(username="target")
    client = staff_with("view_user")
    body = client.get(PEOPLE).content.decode()
    assert "target" in body
    assert "Add a member" not in body
    assert password_of("off", target.pk) not in body
    for path in (ADD, password_of("password", target.pk), password_of("off", target.pk)):
        assert client.post(path, {"username": "sneaky", "confirmed": "yes"}).status_code == 403
    assert client.post(password_of("on", target.pk)).status_code == 403
    assert users().get(pk=target.pk).is_active


def test_the_menu_links_to_it_for_staff_only(page: Client, admin_client: Client) -> None:
    assert f'href="{PEOPLE}"' in admin_client.get("/podcasts/").content.decode()
    assert PEOPLE not in page.get("/podcasts/").content.decode()
    assert f'href="{PEOPLE}"' not in staff_with().get("/podcasts/").content.decode()


def test_the_admins_index_and_overview_link_to_it(admin_client: Client) -> None:
    assert f'href="{PEOPLE}"' in admin_client.get("/admin/").content.decode()
    assert f'href="{PEOPLE}"' in admin_client.get("/admin/overview/").content.decode()


def test_it_takes_a_get_and_each_action_a_post(admin_client: Client, alice: Any) -> None:
    assert admin_client.post(PEOPLE).status_code == 405
    assert admin_client.get(ADD).status_code == 405
    assert admin_client.get(password_of("on", alice.pk)).status_code == 405
    for path in (password_of("password", alice.pk), password_of("off", alice.pk)):
        assert admin_client.put(path).status_code == 405


def test_every_action_needs_its_csrf_token(staff: Any, alice: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(staff)
    assert browser.get(PEOPLE).status_code == 200
    for path in (
        ADD,
        password_of("password", alice.pk),
        password_of("off", alice.pk),
        password_of("on", alice.pk),
    ):
        assert browser.post(path, {"username": "bob", "confirmed": "yes"}).status_code == 403
    assert not users().filter(username="bob").exists()
    alice.refresh_from_db()
    assert alice.is_active
    assert alice.check_password("correct horse battery staple")


# --- The list ---------------------------------------------------------------------------------


def test_each_account_is_listed_with_what_is_known_of_it(admin_client: Client, staff: Any) -> None:
    now = timezone.now()
    synced: Any = UserFactory(username="synced", last_login=now)
    Device.objects.create(user=synced, device_id="phone", created=now, last_used=now)
    UserFactory(username="sleeping", is_active=False)
    leaving: Any = UserFactory(username="leaving", is_active=False)
    AccountDeletion.objects.create(user=leaving, username="leaving", requested=now)
    UserFactory(username="helper", is_staff=True)

    body = admin_client.get(PEOPLE).content.decode()

    rows = {
        name: row
        for row in re.findall(r'<tr role="row".*?</tr>', body, re.S)
        for name in re.findall(r'<th scope="row"[^>]*><a [^>]*>([^<]+)</a>', row)
    }
    assert set(rows) == {"helper", "leaving", "sleeping", "staff", "synced"}
    assert rows["synced"].count(now.strftime("%Y-%m-%d %H:%M")) == 2  # signed in, synced
    assert "on</td>" in rows["synced"]
    assert "<strong>off</strong>" in rows["sleeping"]
    assert "being deleted" in rows["leaving"]
    assert "superuser" in rows["staff"]
    assert "(you)" in rows["staff"]
    assert ">staff</td>" in rows["helper"]
    # Actions: none on oneself nor on an account being deleted; "Turn on" for one turned off.
    assert "Turn off" not in rows["staff"]
    assert "New password" not in rows["staff"]
    assert "Turn off" not in rows["leaving"]
    assert "Turn on" not in rows["leaving"]
    assert "Turn on" in rows["sleeping"]
    assert "Turn off" in rows["synced"]
    assert "5 accounts" in body


def test_the_list_is_paged_in_a_bounded_number_of_queries(
    admin_client: Client, staff: Any, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(6):
        one = admin_client.get(PEOPLE)
    assert one.status_code == 200
    now = timezone.now()
    made = UserFactory.create_batch(PEOPLE_PER_PAGE + 10)
    Device.objects.bulk_create(
        Device(user=user, device_id=f"d{n}", created=now, last_used=now)
        for user in made
        for n in range(3)
    )
    with CaptureQueriesContext(connection) as statements:
        first = admin_client.get(PEOPLE)
    assert len(statements) <= 6
    counts = [q["sql"] for q in statements.captured_queries if "COUNT(" in q["sql"]]
    assert counts, "the pages are numbered by a count"
    assert not any("gpodder_device" in sql for sql in counts), "the count reads no device"
    assert first.content.decode().count('<tr role="row"') == PEOPLE_PER_PAGE + 1  # and the head
    with django_assert_max_num_queries(6):
        second = admin_client.get(f"{PEOPLE}?page=2")
    assert second.content.decode().count('<tr role="row"') == 11 + 1
    assert "Page 2 of 2" in second.content.decode()


@pytest.mark.parametrize("number", ["0", "-1", "abc", "9" * 40, "2.5", "\x00", ""])
def test_a_page_that_is_not_one_shows_one(admin_client: Client, number: str) -> None:
    response = admin_client.get(PEOPLE, {"page": number})
    assert response.status_code == 200
    assert "staff" in response.content.decode()


# --- Adding a member --------------------------------------------------------------------------


def test_adding_a_member_shows_its_one_time_password_once(admin_client: Client) -> None:
    response = admin_client.post(ADD, {"username": " bob "})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    password = shown_password(response)
    body = response.content.decode()
    assert "Shown only this once" in body
    assert "http://testserver/login/" in body
    bob = users().get(username="bob")
    assert bob.check_password(password)
    assert account_selectors.password_is_one_time(user=bob)
    assert password not in admin_client.get(PEOPLE).content.decode()


def test_opened_on_the_server_itself_the_sign_in_address_is_one_a_phone_reaches(
    admin_client: Client, settings: Any
) -> None:
    """Through localhost the address handed over is the home network's, as on Connect; PUBLIC_URL
    wins when set."""
    settings.PUBLIC_URL = ""
    settings.LAN_HOSTS = ["192.168.1.50", "podsync.local"]
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]
    response = admin_client.post(
        ADD, {"username": "bob"}, HTTP_HOST="localhost:8000", REMOTE_ADDR="127.0.0.1"
    )
    body = response.content.decode()
    assert "http://192.168.1.50:8000/login/" in body
    assert "localhost:8000/login/" not in body
    settings.PUBLIC_URL = "https://podcasts.example.org"
    again = admin_client.post(ADD, {"username": "carol"}, HTTP_HOST="localhost:8000")
    assert "https://podcasts.example.org/login/" in again.content.decode()


@pytest.mark.parametrize(
    ("username", "says"),
    [
        ("", "This field is required."),
        ("bob smith", "Enter a valid username"),
        ("a" * 151, "at most 150 characters"),
        ("Alice", "That username is already taken."),
        ("bob\x00", "Null characters are not allowed."),
        ("<script>", "Enter a valid username"),
    ],
)
def test_a_bad_username_is_named_and_nothing_is_made(
    admin_client: Client, alice: Any, username: str, says: str
) -> None:
    before = users().count()
    response = admin_client.post(ADD, {"username": username})
    assert response.status_code == 400
    body = response.content.decode()
    assert says in body
    assert "Input could not be validated" not in body
    assert "<script>" not in body
    assert users().count() == before


def test_a_hostile_add_is_refused_plainly(admin_client: Client) -> None:
    before = users().count()
    for data in ({}, {"other": "x"}, {"username": ""}):
        assert admin_client.post(ADD, data).status_code == 400
    raw = admin_client.post(
        ADD, b"username=%ED%B2%80&%%%=", content_type="application/x-www-form-urlencoded"
    )
    assert raw.status_code == 400
    assert users().count() == before


# --- A new one-time password ------------------------------------------------------------------


def test_a_new_password_is_asked_first_then_shown_once(admin_client: Client, alice: Any) -> None:
    path = password_of("password", alice.pk)
    question = admin_client.get(path)
    assert question.status_code == 200
    assert "A new one-time password for" in question.content.decode()
    # A form posted from anywhere else is asked again.
    assert "A new one-time password for" in admin_client.post(path).content.decode()
    alice.refresh_from_db()
    assert alice.check_password("correct horse battery staple")

    done = admin_client.post(path, {"confirmed": "yes"})

    assert done.status_code == 200
    assert "no-store" in done["Cache-Control"]
    password = shown_password(done)
    alice.refresh_from_db()
    assert alice.check_password(password)
    assert "Their app passwords still work" in done.content.decode()


def test_a_new_password_for_oneself_is_refused(admin_client: Client, staff: Any) -> None:
    staff.set_password(PASSWORD)
    staff.save()
    admin_client.force_login(staff)
    response = admin_client.post(password_of("password", staff.pk), {"confirmed": "yes"})
    assert response.status_code == 302
    followed = admin_client.get(response["Location"]).content.decode()
    assert "Your own password is changed on your account page, not here." in followed
    assert users().get(pk=staff.pk).check_password(PASSWORD)


# --- Turning off and on -----------------------------------------------------------------------


def test_turning_off_is_asked_first_and_on_is_at_once(admin_client: Client, alice: Any) -> None:
    path = password_of("off", alice.pk)
    assert "Turn off" in admin_client.get(path).content.decode()
    admin_client.post(path)  # not from the question: asked again
    assert users().get(pk=alice.pk).is_active

    done = admin_client.post(path, {"confirmed": "yes"}, follow=True)

    assert "The account alice is turned off" in done.content.decode()
    assert not users().get(pk=alice.pk).is_active
    again = admin_client.post(password_of("on", alice.pk), follow=True)
    assert "The account alice is turned on again" in again.content.decode()
    assert users().get(pk=alice.pk).is_active


def test_staff_cannot_turn_themselves_off(admin_client: Client, staff: Any) -> None:
    done = admin_client.post(password_of("off", staff.pk), {"confirmed": "yes"}, follow=True)
    assert "You cannot turn off your own account" in done.content.decode()
    assert users().get(pk=staff.pk).is_active
    assert admin_client.get(PEOPLE).status_code == 200  # still signed in


def test_an_account_being_deleted_is_left_alone(admin_client: Client) -> None:
    leaving: Any = UserFactory(username="leaving", is_active=False, with_password=PASSWORD)
    AccountDeletion.objects.create(user=leaving, username="leaving", requested=timezone.now())
    for path in ("on", "off", "password"):
        done = admin_client.post(password_of(path, leaving.pk), {"confirmed": "yes"}, follow=True)
        assert "This account is being deleted" in done.content.decode()
    leaving.refresh_from_db()
    assert not leaving.is_active
    assert leaving.check_password(PASSWORD)


@pytest.mark.parametrize("user_id", [10**6, 2**31, 2**63 - 1, 2**64])
def test_an_account_that_is_not_there_is_a_404(admin_client: Client, user_id: int) -> None:
    for path in ("password", "off", "on"):
        response = admin_client.post(password_of(path, user_id), {"confirmed": "yes"})
        assert response.status_code == 404
        assert "No account has this id" in response.content.decode()
    assert admin_client.get(password_of("off", user_id)).status_code == 404


def test_an_id_that_is_not_a_number_is_not_a_page(admin_client: Client) -> None:
    for path in (f"{PEOPLE}abc/off/", f"{PEOPLE}-1/off/", f"{PEOPLE}{uuid.uuid4()}/password/"):
        assert admin_client.post(path, {"confirmed": "yes"}).status_code == 404
