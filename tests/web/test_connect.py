"""The connect page (docs/web.md, "Connecting an app"): the address apps are given, each app's
steps, the button that makes an app password for an app, shown once; and the sign-in page that
names the app whose Nextcloud login is under way."""

import base64
import html
import re
import socket
from typing import Any

import pytest
from django.test import Client

from accounts import services as accounts
from accounts.models import AppPassword
from nextcloud import flows
from tests.factories import UserFactory
from tests.web.helpers import PASSWORD

ANTENNAPOD = "AntennaPod/3.5.0"


def copyable(body: str, element_id: str) -> str:
    """The text of the page's element of that id that a Copy button copies."""
    found = re.search(rf'<code id="{element_id}" class="copyable[^"]*">([^<]*)</code>', body)
    assert found, f"no #{element_id} in the page"
    return html.unescape(found.group(1))


def secret_of(body: str) -> str:
    found = re.findall(r'<code id="[a-z]+-secret" class="copyable password">([^<]+)</code>', body)
    assert len(found) == 1, found
    return str(found[0])


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_signed_out_it_asks_to_sign_in_and_comes_back(client: Client, db: None) -> None:
    response = client.get("/connect/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/connect/"
    assert client.post("/connect/", {"app": "kasts"}).status_code == 302
    assert not AppPassword.objects.exists()


def test_the_address_is_public_url_when_set(page: Client, settings: Any) -> None:
    settings.PUBLIC_URL = "https://sync.example.com"
    response = page.get("/connect/", headers={"host": "127.0.0.1"})
    assert response.status_code == 200
    body = response.content.decode()
    for element in ("server-address", "antennapod-nextcloud-address", "gpodder-address"):
        assert copyable(body, element) == "https://sync.example.com"
    for element in ("antennapod-gpodder-address", "kasts-gpodder-address"):
        assert copyable(body, element) == "https://sync.example.com"
    assert copyable(body, "kasts-nextcloud-address") == "https://sync.example.com"
    assert "127.0.0.1" not in body
    assert copyable(body, "username") == "alice"
    assert "not encrypted" not in body


def test_without_public_url_the_address_is_the_one_the_browser_used(
    page: Client, settings: Any
) -> None:
    settings.PUBLIC_URL = ""
    settings.ALLOWED_HOSTS = ["podsync.lan", "192.168.1.50"]
    settings.LAN_HOSTS = ["192.168.1.50", "podsync.local"]
    body = page.get("/connect/", headers={"host": "podsync.lan:8000"}).content.decode()
    assert copyable(body, "server-address") == "http://podsync.lan:8000"
    assert 'id="address-why"' not in body  # a LAN name is right as it is: nothing to explain
    # Plain HTTP: the address with its scheme, and why, in plain words.
    assert "starting with <code>http://</code>" in body
    assert "The connection is not encrypted, which is fine inside your home." in body
    assert "Password and data are not encrypted!" in body  # what AntennaPod warns then
    secure = page.get("/connect/", headers={"host": "podsync.lan"}, secure=True)
    assert copyable(secure.content.decode(), "server-address") == "https://podsync.lan"
    assert "not encrypted" not in secure.content.decode()
    lan = page.get("/connect/", headers={"host": "192.168.1.50:8000"}).content.decode()
    assert copyable(lan, "server-address") == "http://192.168.1.50:8000"


def why(body: str) -> str:
    found = re.search(r'<p [^>]*id="address-why">(.*?)</p>', body, re.S)
    assert found, "no line saying why"
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


@pytest.mark.parametrize(
    "host", ["localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LocalHost:8000"]
)
def test_opened_through_loopback_it_gives_the_address_the_start_found(
    page: Client, settings: Any, host: str
) -> None:
    """A person at the box opens the address `make run` prints first: a phone given
    `localhost` would look for the server on itself."""
    settings.PUBLIC_URL = ""
    settings.IN_CONTAINER = False
    settings.LAN_HOSTS = ["192.168.1.50", "10.88.0.1", "mynas.local"]
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
    body = page.get("/connect/", headers={"host": host}).content.decode()
    for element in ("server-address", "antennapod-nextcloud-address", "gpodder-address"):
        assert copyable(body, element) == "http://192.168.1.50:8000"
    said = why(body)
    assert f"You opened this page through {host.rsplit(':', 1)[0].lower()}" in said
    assert "on a phone means the phone itself" in said
    assert "try http://10.88.0.1:8000 or http://mynas.local:8000." in said
    assert "localhost:8000" not in copyable(body, "kasts-nextcloud-address")
    # Opened through one of the home network's addresses or names, that one is kept.
    for lan in ("192.168.1.50:8000", "mynas.local:8000", "nas.fritz.box:8000", "[fd00::2]:8000"):
        settings.ALLOWED_HOSTS = [lan.rsplit(":", 1)[0]]
        kept = page.get("/connect/", headers={"host": lan}, REMOTE_ADDR="192.168.1.7").content
        assert copyable(kept.decode(), "server-address") == f"http://{lan}"
        assert b'id="address-why"' not in kept
    # PUBLIC_URL, when set, wins over all of it.
    settings.PUBLIC_URL = "http://podsync.home.arpa:8000"
    settings.ALLOWED_HOSTS = ["*"]
    public = page.get("/connect/", headers={"host": host}).content.decode()
    assert copyable(public, "server-address") == "http://podsync.home.arpa:8000"
    assert 'id="address-why"' not in public


def test_the_real_start_list_is_what_loopback_is_given(page: Client, settings: Any) -> None:
    """LAN_HOSTS as the settings found them on this machine, the same list serve prints."""
    from home.environment import route_address

    settings.PUBLIC_URL = ""
    settings.IN_CONTAINER = False
    found = settings.LAN_HOSTS  # as the settings found them at start (other tests' containers
    assert found, "this machine has an address on a network"  # come and go since)
    assert found[0] == route_address()
    body = page.get("/connect/", headers={"host": "localhost:8123"}).content.decode()
    shown = f"[{found[0]}]" if ":" in found[0] else found[0]
    assert copyable(body, "server-address") == f"http://{shown}:8123"


def test_the_machines_bare_name_is_replaced_only_from_the_machine_itself(
    page: Client, settings: Any
) -> None:
    """Opened on the box as `mynas` (its /etc/hosts answers), the phone's DNS may not know it;
    opened so from another computer, that computer's DNS knew it, and a phone's likely does."""
    name = socket.gethostname().lower()
    settings.PUBLIC_URL = ""
    settings.IN_CONTAINER = False
    settings.ALLOWED_HOSTS = [name]
    settings.LAN_HOSTS = ["192.168.1.50"]
    here = page.get("/connect/", headers={"host": f"{name}:8000"}).content.decode()
    assert copyable(here, "server-address") == "http://192.168.1.50:8000"
    there = page.get("/connect/", headers={"host": f"{name}:8000"}, REMOTE_ADDR="192.168.1.7")
    assert copyable(there.content.decode(), "server-address") == f"http://{name}:8000"


def test_in_a_container_opened_through_localhost_it_asks_for_the_hosts_address(
    page: Client, settings: Any
) -> None:
    """The container's own addresses reach no phone, and the port published is the one the
    browser used: the line names it."""
    settings.PUBLIC_URL = ""
    settings.IN_CONTAINER = True
    settings.LAN_HOSTS = []
    body = page.get("/connect/", headers={"host": "localhost:8123"}).content.decode()
    said = why(body)
    assert "Type this computer's name or network address in place of localhost" in said
    assert "http://192.168.1.20:8123" in said
    assert "set PUBLIC_URL" in said
    # Opened through the host's LAN name, the address is right as it is.
    settings.ALLOWED_HOSTS = ["mynas"]
    lan = page.get("/connect/", headers={"host": "mynas:8123"}).content.decode()
    assert copyable(lan, "server-address") == "http://mynas:8123"
    assert 'id="address-why"' not in lan


def test_opened_through_loopback_on_a_machine_with_no_network(page: Client, settings: Any) -> None:
    settings.PUBLIC_URL = ""
    settings.IN_CONTAINER = False
    settings.LAN_HOSTS = []
    body = page.get("/connect/", headers={"host": "127.0.0.1:8000"}).content.decode()
    assert "has no address on a network yet" in why(body)


@pytest.mark.parametrize(
    "host", ["localhost.:8000", "xn--nxasmq6b.localhost:8000", "[::ffff:127.0.0.1]:8000"]
)
def test_other_spellings_of_loopback_are_loopback(page: Client, settings: Any, host: str) -> None:
    settings.PUBLIC_URL = ""
    settings.IN_CONTAINER = False
    settings.ALLOWED_HOSTS = ["*"]
    settings.LAN_HOSTS = ["192.168.1.50"]
    response = page.get("/connect/", headers={"host": host})
    assert response.status_code == 200
    assert copyable(response.content.decode(), "server-address") == "http://192.168.1.50:8000"


def test_every_app_has_its_steps_with_the_labels_it_shows(page: Client) -> None:
    body = html.unescape(page.get("/connect/").content.decode())
    for label in (
        # AntennaPod, both options.
        "Choose synchronization provider",
        "Gpodder Sync is an open-source Nextcloud app",
        "Gpodder.net is an open-source podcast synchronization service",
        "Server address",
        "Proceed to login",
        "Log in",
        "Create device",
        "Synchronize now",
        # gPodder.
        "Synchronize subscriptions and episode actions",
        "Device name",
        # Kasts, both providers.
        "Select Sync Provider",
        "GPodder Nextcloud",
        "Use custom server",
        "Hostname",
        "Perform a first sync now?",
        # Cardo.
        "URL of Nextcloud server",
        "Gpodder Server URL",
    ):
        assert label in body, label
    for app in ("antennapod", "gpodder", "kasts", "cardo"):
        assert f'<input type="hidden" name="app" value="{app}">' in body
    # The menu marks the account's section.
    assert '<a href="/account/" aria-current="page">' in body


def test_the_page_is_never_cached(page: Client) -> None:
    for response in (page.get("/connect/"), page.post("/connect/", {"app": "gpodder"})):
        assert "no-store" in response["Cache-Control"]
        assert "max-age=0" in response["Cache-Control"]


def test_the_button_makes_an_app_password_for_that_app_shown_once(
    page: Client, person: Any
) -> None:
    response = page.post("/connect/", {"app": "gpodder"})
    assert response.status_code == 200
    body = response.content.decode()
    secret = secret_of(body)
    assert 'id="gpodder-password"' in body
    assert "The app password for <strong>gPodder</strong>" in body
    made = AppPassword.objects.get(user=person)
    assert made.name == "gPodder"
    assert secret not in made.digest  # only its digest is kept
    # It works where apps use it, with the username the page shows.
    username = copyable(body, "username")
    synced = Client().get(
        f"/api/2/devices/{username}.json", headers={"authorization": basic(username, secret)}
    )
    assert synced.status_code == 200
    # Never shown again.
    assert secret not in page.get("/connect/").content.decode()
    assert secret not in page.get("/account/").content.decode()


def test_pressing_the_button_again_makes_another_of_another_name(page: Client, person: Any) -> None:
    first = secret_of(page.post("/connect/", {"app": "kasts"}).content.decode())
    second = secret_of(page.post("/connect/", {"app": "kasts"}).content.decode())
    third = secret_of(page.post("/connect/", {"app": "kasts"}).content.decode())
    assert len({first, second, third}) == 3
    names = set(AppPassword.objects.filter(user=person).values_list("name", flat=True))
    assert names == {"Kasts", "Kasts (2)", "Kasts (3)"}


def test_past_max_app_passwords_the_button_says_so_and_makes_nothing(
    page: Client, person: Any, settings: Any
) -> None:
    settings.MAX_APP_PASSWORDS = 2
    accounts.app_password_create(user=person, name="phone")
    accounts.app_password_create(user=person, name="laptop")
    response = page.post("/connect/", {"app": "antennapod"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "You have 2 app passwords, the most an account may have" in body
    assert 'role="alert"' in body
    assert 'class="copyable password"' not in body
    assert AppPassword.objects.filter(user=person).count() == 2
    # The message is in the section of the app whose button was pressed.
    section = body[body.index('id="antennapod-password"') :]
    assert section.index("the most an account may have") < section.index("</div>")


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"app": ""},
        {"app": "AntennaPod"},
        {"app": "<script>alert(1)</script>"},
        {"app": "kasts\x00"},
        {"app": "ä" * 5000},
    ],
)
def test_a_button_for_no_app_of_the_page_is_refused_plainly(page: Client, data: Any) -> None:
    response = page.post("/connect/", data)
    assert response.status_code == 400
    body = response.content.decode()
    error = r'<div role="alert"><ul class="errorlist"><li>Choose [^<]+\.</li></ul></div>'
    assert re.search(error, body)
    assert "<script>alert" not in body
    assert not AppPassword.objects.exists()


def test_the_form_needs_its_csrf_token(person: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    assert browser.post("/connect/", {"app": "kasts"}).status_code == 403
    assert not AppPassword.objects.exists()


def test_other_methods_are_refused(page: Client) -> None:
    assert page.put("/connect/").status_code == 405
    assert page.delete("/connect/").status_code == 405


def test_a_username_antennapods_gpodder_option_refuses_is_told(db: None) -> None:
    person: Any = UserFactory(username="zoë+pods@home")
    browser = Client()
    browser.force_login(person)
    body = browser.get("/connect/").content.decode()
    assert copyable(body, "username") == "zoë+pods@home"
    assert "AntennaPod's gpodder.net option refuses a username with <code>+@</code>" in body
    plain: Any = UserFactory(username="zoë_pods")
    browser.force_login(plain)
    assert "refuses a username" not in browser.get("/connect/").content.decode()


def test_the_page_reads_little(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    for number in range(5):
        accounts.app_password_create(user=person, name=f"app {number}")
    page.get("/connect/")
    with django_assert_max_num_queries(3):
        page.get("/connect/")
    with django_assert_max_num_queries(8):
        assert page.post("/connect/", {"app": "cardo"}).status_code == 200


def test_the_pages_lead_to_it(page: Client) -> None:
    for path in ("/podcasts/", "/devices/", "/account/"):
        body = page.get(path).content.decode()
        main = body[body.index('<main id="main">') : body.index("</main>")]
        assert 'href="/connect/"' in main, path  # besides the footer's link, on every page


def test_it_names_the_three_apis_where_they_are(page: Client) -> None:
    """The APIs' paths, which the footer no longer lists; each link leads somewhere."""
    body = page.get("/connect/").content.decode()
    apis = body[body.index('<section class="app" aria-labelledby="apis">') :]
    apis = apis[: apis.index("</section>")]
    for named in (
        "the Open Podcast API, at <code>/v1/</code>",
        "the gpodder.net API, at <code>/api/2/</code>",
        "the Nextcloud gPodder Sync API, at <code>/index.php/apps/gpoddersync/</code>",
    ):
        assert named in apis, named
    links = re.findall(r'href="([^"]+)"', apis)
    assert links == ["/v1/docs/", "/v1/openapi.json"]
    for link in links:
        assert Client().get(link).status_code == 200, link


def test_the_sign_in_page_names_the_app_whose_login_is_under_way(
    client: Client, person: Any
) -> None:
    started = flows.login_flow_start(client_name=ANTENNAPOD)
    flow_page = f"/login/flow/{started.login_token}/"
    redirected = client.get(flow_page)
    assert redirected["Location"] == f"/login/?next={flow_page}"
    body = client.get(redirected["Location"]).content.decode()
    assert f'<strong class="url">{ANTENNAPOD}</strong> asks to sync with your account' in body
    # Still named after a wrong password.
    wrong = client.post("/login/", {"username": "alice", "password": "wrong", "next": flow_page})
    assert ANTENNAPOD in wrong.content.decode()
    signed = client.post("/login/", {"username": "alice", "password": PASSWORD, "next": flow_page})
    assert signed["Location"] == flow_page
    assert f"Allow {ANTENNAPOD} to sync" in client.get(flow_page).content.decode()


@pytest.mark.parametrize(
    "next_page",
    [
        "/podcasts/",
        "/login/flow/" + "a" * 64 + "/",  # no such flow
        "/login/flow/short/",
        "/login/v2",
        "https://elsewhere.example/login/flow/" + "a" * 64 + "/",
        "/nowhere/\x00",
    ],
)
def test_the_sign_in_page_names_no_app_for_any_other_page(
    client: Client, db: None, next_page: str
) -> None:
    flows.login_flow_start(client_name=ANTENNAPOD)
    response = client.get("/login/", {"next": next_page})
    assert response.status_code == 200
    body = response.content.decode()
    assert "asks to sync" not in body
    assert "Apps sign in with an app password" in body


def test_an_answered_or_expired_flow_is_named_no_more(client: Client, person: Any) -> None:
    started = flows.login_flow_start(client_name=ANTENNAPOD)
    flows.login_flow_deny(login_token=started.login_token)
    body = client.get("/login/", {"next": f"/login/flow/{started.login_token}/"}).content
    assert b"asks to sync" not in body


def test_the_apps_name_is_shown_as_text(client: Client, db: None) -> None:
    started = flows.login_flow_start(client_name="<img src=x onerror=alert(1)> Évil\u202eApp")
    body = client.get("/login/", {"next": f"/login/flow/{started.login_token}/"}).content.decode()
    assert "<img src=x" not in body
    assert "&lt;img src=x onerror=alert(1)&gt; ÉvilApp</strong> asks to sync" in body
