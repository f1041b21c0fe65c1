"""Nextcloud's Login Flow v2, as AntennaPod runs it (docs/nextcloud.md, "Logging in"): the app
starts a flow, the person allows it on a page of the site, and the app's poll collects an app
password once."""

import base64
import hashlib
import json
import re
from typing import Any

import pytest
from django.test import Client

from accounts.models import AppPassword
from accounts.services import app_password_create
from nextcloud import flows
from nextcloud.flow_views import LoginFlowThrottle
from nextcloud.models import LoginFlow
from tests.helpers import Clock, at_once
from tests.web.helpers import PASSWORD

ANTENNAPOD = "AntennaPod/3.5.0"
TOKEN = re.compile(r"^[A-Za-z0-9]{64}$")
STARTS = ["/index.php/login/v2", "/index.php/login/v2/", "/login/v2", "/login/v2/"]


def start(path: str = "/index.php/login/v2", **extra: Any) -> Any:
    """The app starts a flow (no body, AntennaPod's User-Agent unless `extra` says otherwise)."""
    extra.setdefault("HTTP_USER_AGENT", ANTENNAPOD)
    response = Client().post(path, **extra)
    assert response.status_code == 200, response.content
    return response.json()


def login_path(started: dict[str, Any]) -> str:
    return started["login"].removeprefix("http://testserver")


def poll(token: Any, **extra: Any) -> Any:
    return Client().post("/index.php/login/v2/poll", {"token": token}, **extra)


def assert_nothing(response: Any) -> None:
    """Nextcloud's answer to a poll that finds nothing: 404 with an empty list, never cached."""
    assert response.status_code == 404, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json() == []
    assert response["Cache-Control"] == "no-store"


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def allow(client: Client, started: dict[str, Any]) -> Any:
    response = client.post(login_path(started), {"decision": "allow"})
    assert response.status_code == 200, response.content
    return response


# --- Starting -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", STARTS)
def test_start_answers_a_poll_token_and_absolute_urls(db: None, path: str) -> None:
    response = Client().post(path, HTTP_USER_AGENT=ANTENNAPOD)  # no body, as AntennaPod sends
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"poll", "login"}
    assert set(body["poll"]) == {"token", "endpoint"}
    prefix = "/index.php" if path.startswith("/index.php/") else ""
    assert body["poll"]["endpoint"] == f"http://testserver{prefix}/login/v2/poll"
    assert re.fullmatch(r"http://testserver/login/flow/[A-Za-z0-9]{64}/", body["login"])


def test_start_takes_an_empty_form_body_and_never_redirects(db: None) -> None:
    for path in STARTS:
        response = Client().post(
            path, "", content_type="application/x-www-form-urlencoded", HTTP_USER_AGENT="x"
        )
        assert response.status_code == 200
    # Only POST starts one; a GET is refused, not redirected.
    response = Client().get("/index.php/login/v2")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response["Cache-Control"] == "no-store"


def test_tokens_are_long_letters_and_digits_and_differ(db: None) -> None:
    seen = set()
    for _ in range(5):
        started = start()
        poll_token = started["poll"]["token"]
        login_token = login_path(started).split("/")[-2]
        assert TOKEN.match(poll_token)
        assert TOKEN.match(login_token)
        assert poll_token != login_token
        seen |= {poll_token, login_token}
    assert len(seen) == 10


def test_only_digests_of_the_tokens_are_stored(db: None) -> None:
    started = start()
    poll_token = started["poll"]["token"]
    login_token = login_path(started).split("/")[-2]
    flow = LoginFlow.objects.get()
    assert flow.poll_digest == hashlib.sha256(poll_token.encode()).hexdigest()
    assert flow.login_digest == hashlib.sha256(login_token.encode()).hexdigest()
    row = json.dumps(list(LoginFlow.objects.values_list()), default=str)
    assert poll_token not in row
    assert login_token not in row
    assert flow.client_name == ANTENNAPOD
    assert flow.user is None


@pytest.mark.parametrize(
    ("user_agent", "name"),
    [
        ("AntennaPod/3.5.0", "AntennaPod/3.5.0"),
        ("", flows.UNNAMED_CLIENT),
        ("  \t ", flows.UNNAMED_CLIENT),
        ("Evil\x00\x1b[2J\u202eApp\x7f", "Evil[2JApp"),
        ("a" * 10_000, "a" * flows.CLIENT_NAME_LENGTH),
        ("Podcast  app\u00a0 on  a phone", "Podcast app on a phone"),
    ],
)
def test_the_flow_is_named_after_the_user_agent(db: None, user_agent: str, name: str) -> None:
    start(HTTP_USER_AGENT=user_agent)
    assert LoginFlow.objects.get().client_name == name


def test_starting_deletes_expired_flows(db: None, clock: Clock) -> None:
    start()
    clock.advance(minutes=20)
    start()
    assert LoginFlow.objects.count() == 1


def test_starting_is_throttled_per_address(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LoginFlowThrottle, "THROTTLE_RATES", {"login_flow": "3/hour"})
    for _ in range(3):
        start()
    response = Client().post("/index.php/login/v2", HTTP_USER_AGENT=ANTENNAPOD)
    assert response.status_code == 429
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["code"] == "429"
    assert "3/hour Nextcloud logins started per address" in body["message"]
    assert int(response["Retry-After"]) > 0
    assert LoginFlow.objects.count() == 3
    # Another address has its own count.
    start(REMOTE_ADDR="192.0.2.7")


def test_the_default_rate_lets_a_phone_retry(db: None) -> None:
    for _ in range(10):
        start()


# --- Polling, allowing, denying ---------------------------------------------------------------


def test_a_poll_before_the_person_allows_finds_nothing(
    db: None, django_assert_num_queries: Any
) -> None:
    token = start()["poll"]["token"]
    with django_assert_num_queries(1):  # every second, for minutes: one read
        assert_nothing(poll(token))
    assert_nothing(Client().post(f"/login/v2/poll?token={token}"))
    assert_nothing(
        Client().post(
            "/index.php/login/v2/poll/", {"token": token}, content_type="application/json"
        )
    )
    assert LoginFlow.objects.count() == 1


def test_antennapods_whole_login(db: None, person: Any) -> None:
    started = start()
    browser = Client()
    # Signed out, the page sends the person to sign in, and back.
    response = browser.get(login_path(started))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/login/flow/")
    response = browser.post(
        "/login/",
        {"username": "alice", "password": PASSWORD, "next": login_path(started)},
    )
    assert response.status_code == 302
    assert response["Location"] == login_path(started)
    page = browser.get(login_path(started))
    assert page.status_code == 200
    text = page.content.decode()
    assert f"Allow {ANTENNAPOD} to sync with your account?" in text
    assert "alice" in text
    assert 'value="allow"' in text
    assert 'value="deny"' in text
    assert "no-store" in page["Cache-Control"]

    assert "can sync now" in allow(browser, started).content.decode()
    # Answered: the page is gone.
    assert browser.get(login_path(started)).status_code == 404
    assert not AppPassword.objects.exists()  # made only when the app collects it

    response = poll(started["poll"]["token"])
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"server", "loginName", "appPassword"}
    assert body["server"] == "http://testserver"
    assert body["loginName"] == "alice"
    made = AppPassword.objects.get(user=person)
    assert made.name == ANTENNAPOD
    assert body["appPassword"] not in json.dumps(
        list(AppPassword.objects.values_list()), default=str
    )
    assert not LoginFlow.objects.exists()
    # Once only.
    assert_nothing(poll(started["poll"]["token"]))

    # The app syncs with it from now on, with Basic on every request.
    app = Client()
    response = app.get(
        "/api/2/devices/alice.json",
        HTTP_AUTHORIZATION=basic(body["loginName"], body["appPassword"]),
    )
    assert response.status_code == 200, response.content
    assert response.json() == []


@pytest.mark.parametrize("how", ["form", "json", "json-as-text", "query"])
def test_the_poll_token_is_read_from_a_form_json_or_the_query(
    db: None, page: Client, how: str
) -> None:
    started = start()
    allow(page, started)
    token = started["poll"]["token"]
    path = "/index.php/login/v2/poll"
    client = Client()
    if how == "form":
        response = client.post(path, f"token={token}", "application/x-www-form-urlencoded")
    elif how == "json":
        response = client.post(path, {"token": token}, "application/json")
    elif how == "json-as-text":
        response = client.post(path, json.dumps({"token": token}), "text/plain")
    else:
        response = client.post(f"{path}?token={token}")
    assert response.status_code == 200, response.content
    assert response.json()["loginName"] == "alice"


def test_deny_ends_the_flow(db: None, page: Client) -> None:
    started = start()
    response = page.post(login_path(started), {"decision": "deny"})
    assert response.status_code == 200
    assert "was denied" in response.content.decode()
    assert_nothing(poll(started["poll"]["token"]))
    assert not LoginFlow.objects.exists()
    assert not AppPassword.objects.exists()
    assert page.get(login_path(started)).status_code == 404
    # Neither answer can follow.
    assert page.post(login_path(started), {"decision": "allow"}).status_code == 404


def test_an_answer_that_is_neither_is_refused(db: None, page: Client) -> None:
    started = start()
    for data in ({}, {"decision": "maybe"}, {"decision": "allow\x00"}):
        response = page.post(login_path(started), data)
        assert response.status_code == 400
        assert "Choose Allow or Deny." in response.content.decode()
    assert LoginFlow.objects.get().user is None


def test_an_expired_flow_is_gone(db: None, page: Client, clock: Clock) -> None:
    waiting = start()
    allowed = start()
    allow(page, allowed)
    clock.advance(minutes=20, seconds=1)
    assert page.get(login_path(waiting)).status_code == 404
    assert page.post(login_path(waiting), {"decision": "allow"}).status_code == 404
    assert_nothing(poll(waiting["poll"]["token"]))
    assert_nothing(poll(allowed["poll"]["token"]))
    assert not AppPassword.objects.exists()


def test_a_flow_lives_twenty_minutes(db: None, page: Client, clock: Clock) -> None:
    started = start()
    clock.advance(minutes=19, seconds=59)
    allow(page, started)
    assert poll(started["poll"]["token"]).status_code == 200


def test_the_account_that_allows_is_the_one_logged_in(db: None, person: Any, stranger: Any) -> None:
    started = start()
    browser = Client()
    browser.force_login(stranger)
    assert "mallory" in browser.get(login_path(started)).content.decode()
    allow(browser, started)
    body = poll(started["poll"]["token"]).json()
    assert body["loginName"] == "mallory"
    assert AppPassword.objects.get().user == stranger
    response = Client().get(
        "/api/2/devices/mallory.json", HTTP_AUTHORIZATION=basic("mallory", body["appPassword"])
    )
    assert response.status_code == 200
    # It is not alice's.
    response = Client().get(
        "/api/2/devices/alice.json", HTTP_AUTHORIZATION=basic("alice", body["appPassword"])
    )
    assert response.status_code == 401


def test_a_second_app_of_the_same_name_gets_a_name_of_its_own(
    db: None, person: Any, page: Client
) -> None:
    app_password_create(user=person, name=ANTENNAPOD)
    for _ in range(2):
        started = start()
        allow(page, started)
        assert poll(started["poll"]["token"]).status_code == 200
    names = set(AppPassword.objects.filter(user=person).values_list("name", flat=True))
    assert names == {ANTENNAPOD, f"{ANTENNAPOD} (2)", f"{ANTENNAPOD} (3)"}


def test_an_account_without_room_for_an_app_password_is_told_so(
    db: None, person: Any, page: Client, settings: Any
) -> None:
    settings.MAX_APP_PASSWORDS = 1
    app_password_create(user=person, name="Kasts")
    started = start()
    response = page.post(login_path(started), {"decision": "allow"})
    assert response.status_code == 400
    assert "MAX_APP_PASSWORDS" in response.content.decode()
    assert LoginFlow.objects.get().user is None
    assert_nothing(poll(started["poll"]["token"]))


def test_an_account_deactivated_after_allowing_gets_nothing(
    db: None, person: Any, page: Client
) -> None:
    started = start()
    allow(page, started)
    person.is_active = False
    person.save()
    assert_nothing(poll(started["poll"]["token"]))
    assert not AppPassword.objects.exists()
    assert not LoginFlow.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_of_two_polls_at_once_one_gets_the_password(person: Any) -> None:
    started = start()
    browser = Client()
    browser.force_login(person)
    allow(browser, started)
    token = started["poll"]["token"]
    answers = at_once(*[lambda: poll(token) for _ in range(4)])
    assert sorted(answer.status_code for answer in answers) == [200, 404, 404, 404]
    assert AppPassword.objects.count() == 1


# --- The page ---------------------------------------------------------------------------------


def test_the_page_asks_to_sign_in_and_grants_nothing_signed_out(db: None) -> None:
    started = start()
    for response in (
        Client().get(login_path(started)),
        Client().post(login_path(started), {"decision": "allow"}),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=")
    assert LoginFlow.objects.get().user is None


def test_a_session_an_app_made_cannot_allow(db: None, person: Any) -> None:
    """A session made with Basic on the gpodder API, even with the account's own password, is
    nobody on the pages (accounts.sessions)."""
    started = start()
    _, app_password = app_password_create(user=person, name="gPodder")
    for secret in (app_password, PASSWORD):
        app = Client()
        response = app.get("/api/2/devices/alice.json", HTTP_AUTHORIZATION=basic("alice", secret))
        assert response.status_code == 200
        assert app.cookies.get("sessionid")
        for response in (
            app.get(login_path(started)),
            app.post(login_path(started), {"decision": "allow"}),
        ):
            assert response.status_code == 302
            assert response["Location"].startswith("/login/?next=")
    assert LoginFlow.objects.get().user is None
    assert_nothing(poll(started["poll"]["token"]))


def test_allow_and_deny_need_the_csrf_token(db: None, person: Any) -> None:
    started = start()
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    for decision in ("allow", "deny"):
        response = browser.post(login_path(started), {"decision": decision})
        assert response.status_code == 403
    assert LoginFlow.objects.get().user is None
    browser.get(login_path(started))
    csrf = browser.cookies["csrftoken"].value
    response = browser.post(login_path(started), {"decision": "allow", "csrfmiddlewaretoken": csrf})
    assert response.status_code == 200
    assert LoginFlow.objects.get().user == person


def test_the_page_is_a_page_of_the_site(db: None, page: Client) -> None:
    """The site's Content Security Policy and framing rules, and the person's menu."""
    response = page.get(login_path(start()))
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"
    text = response.content.decode()
    assert "<script>" not in text
    assert " style=" not in text
    assert "csrfmiddlewaretoken" in text


def test_the_page_says_where_and_when_the_flow_was_started(
    db: None, page: Client, clock: Clock
) -> None:
    """A link someone else started, naming a real app, must be told apart from one's own: the
    page shows the address the app started from, whether this browser shares it, and when."""
    mine = start(REMOTE_ADDR="198.51.100.7")
    theirs = start(REMOTE_ADDR="203.0.113.66")
    assert LoginFlow.objects.get(client_name=ANTENNAPOD, started_from="198.51.100.7")
    clock.advance(seconds=180)

    own = page.get(login_path(mine), REMOTE_ADDR="198.51.100.7").content.decode()
    assert "198.51.100.7</span>, the address this browser uses too" in own
    assert "3\xa0minutes ago" in own
    assert "Check before you allow" not in own

    other = page.get(login_path(theirs), REMOTE_ADDR="198.51.100.7").content.decode()
    assert "203.0.113.66</span>, not this browser's address" in other
    assert "198.51.100.7" in other
    assert "Check before you allow" in other
    assert "someone may have sent you this link" in other


def test_a_flow_from_an_address_that_is_no_address_is_from_an_unknown_one(
    db: None, page: Client
) -> None:
    flows.login_flow_start(client_name=ANTENNAPOD, address="not an address")
    assert LoginFlow.objects.get().started_from is None
    assert flows.address_of("2001:db8::1 ") == "2001:db8::1"
    assert flows.address_of(None) is None


@pytest.mark.parametrize(
    "token",
    [
        "A" * 64,
        "a" * 63,
        "a" * 65,
        "x" * 20_000,
        "ü" * 64,
        "a" * 63 + "\x00",
        "%00" * 30,
        "..",
        "<script>",
        "\uff11" * 64,  # fullwidth digits: isalnum, but not ours
    ],
)
def test_an_unknown_or_hostile_token_is_a_plain_404(db: None, page: Client, token: str) -> None:
    start()
    for client in (page, Client()):
        assert client.get(f"/login/flow/{token}/").status_code == 404
        assert client.post(f"/login/flow/{token}/", {"decision": "allow"}).status_code == 404
    assert LoginFlow.objects.get().user is None


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("token=" + "a" * 64, "application/x-www-form-urlencoded"),
        ("token=" + "x" * 200_000, "application/x-www-form-urlencoded"),
        ("token=%00" + "a" * 63, "application/x-www-form-urlencoded"),
        ("token=%C3%BC" * 3, "application/x-www-form-urlencoded"),
        (b"token=\xff\xfe" + b"a" * 62, "application/x-www-form-urlencoded"),
        ("&".join(["a=b"] * 5000), "application/x-www-form-urlencoded"),
        ('{"token": ["a"]}', "application/json"),
        ('{"token": 12345}', "application/json"),
        ('{"token": null}', "application/json"),
        ('{"token": {"$ne": ""}}', "application/json"),
        ('{"token": "\\u0000"}', "application/json"),
        ('["token"]', "application/json"),
        ("{not json", "application/json"),
        ("[" * 100_000, "application/json"),
        ("{" * 100_000, "application/json"),
        ('{"token": ' + "[" * 100_000, "text/plain"),
        ("--x\r\nnot a multipart body", "multipart/form-data; boundary=x"),
        ("", "application/x-www-form-urlencoded"),
        ("", ""),
    ],
)
def test_a_hostile_poll_finds_nothing(db: None, body: Any, content_type: str) -> None:
    start()
    response = Client().post("/index.php/login/v2/poll", body, content_type=content_type)
    assert_nothing(response)


def test_a_poll_by_get_is_refused(db: None) -> None:
    token = start()["poll"]["token"]
    response = Client().get(f"/index.php/login/v2/poll?token={token}")
    assert response.status_code == 405


# --- The server the app keeps -----------------------------------------------------------------


def test_the_server_behind_a_tls_proxy_is_https(db: None, page: Client) -> None:
    # As a proxy sends it on: the Host it was asked for, and the scheme it was asked over.
    proxied: dict[str, Any] = {"HTTP_HOST": "testserver", "HTTP_X_FORWARDED_PROTO": "https"}
    started = start(**proxied)
    assert started["poll"]["endpoint"] == "https://testserver/index.php/login/v2/poll"
    assert started["login"].startswith("https://testserver/login/flow/")
    allow(page, started)
    body = poll(started["poll"]["token"], **proxied).json()
    assert body["server"] == "https://testserver"


def test_the_server_is_the_public_url_when_set(db: None, page: Client, settings: Any) -> None:
    settings.PUBLIC_URL = "https://sync.example.com"
    started = start(path="/login/v2")
    assert started["poll"]["endpoint"] == "https://sync.example.com/login/v2/poll"
    assert started["login"].startswith("https://sync.example.com/login/flow/")
    page_path = started["login"].removeprefix("https://sync.example.com")
    assert page.post(page_path, {"decision": "allow"}).status_code == 200
    body = poll(started["poll"]["token"]).json()
    assert body["server"] == "https://sync.example.com"


def test_behind_a_proxy_on_another_port_the_server_keeps_its_port(
    db: None, page: Client, settings: Any
) -> None:
    """A proxy that passes the Host as the browser sent it (nginx's `$http_host`), on 8443."""
    settings.ALLOWED_HOSTS = ["sync.example.com"]
    proxied: dict[str, Any] = {
        "HTTP_HOST": "sync.example.com:8443",
        "HTTP_X_FORWARDED_PROTO": "https",
        "REMOTE_ADDR": "127.0.0.1",
    }
    started = start(**proxied)
    assert started["poll"]["endpoint"] == "https://sync.example.com:8443/index.php/login/v2/poll"
    assert started["login"].startswith("https://sync.example.com:8443/login/flow/")
    page_path = started["login"].removeprefix("https://sync.example.com:8443")
    assert page.post(page_path, {"decision": "allow"}, **proxied).status_code == 200
    body = poll(started["poll"]["token"], **proxied).json()
    assert body["server"] == "https://sync.example.com:8443"
