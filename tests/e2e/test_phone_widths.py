"""Every page of the account holders' site at a small phone's width (320 px), a common phone's
(390 px) and a laptop's (1366 px), in headless Chromium against a live server, with realistic
data: a feed URL of 2,048 characters, long Unicode titles and names, many devices and
podcasts, app passwords, a podcast with episodes, actions and a URL and guid history, the
history, an OPML import with failures, deletions; with mail on and registration by invitation,
the mailed links' pages and an invitation's.

On each page at each width: nothing scrolls sideways, no form control or button is cut off at
the edge, the menu takes one or two lines, and axe-core finds no serious or critical violation.
The phones' pages (and a few at 1366 px) are saved whole under TEST_OUTPUT_DIR/e2e/ as
`phone-<page>-<width>.png`.

PAGES below lists the pages: a page added to the site is one line there, and
test_every_page_is_listed fails until it is.
"""

import base64
import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from django.urls import URLPattern, get_resolver
from django_otp.plugins.otp_totp.models import TOTPDevice
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from accounts import addresses, invitations
from accounts import services as accounts
from accounts.models import AppPassword
from core import clock
from deletions import services as deletions
from deletions.models import Deletion
from episodes import services as episodes
from episodes.actions import actions_parsed
from factors import services as factors
from feedchecks import services as feedchecks
from gpodder import services as gpodder
from imports.models import Import
from nextcloud import flows
from subscriptions import services as subscriptions
from subscriptions.feeds import feed_key_digest
from subscriptions.services import AddEntry, SubscriptionUpdate
from tests.e2e.browser import (
    accessibility_violations,
    at_width,
    count,
    whole_page_screenshot,
)
from tests.factories import UserFactory
from tests.feedchecks.feedserver import FeedServer
from tests.helpers import subscribe, totp_code, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

PHONES = (320, 390)
WIDTHS = (*PHONES, 1366)
# The pages whose tables and menu are also saved at a laptop's width, to compare.
LAPTOP_SCREENSHOTS = {"podcast", "devices", "account"}
PASSWORD = "a long and unusual passphrase 77"
# Long, as Django allows (letters of any script): the menu shows it beside "Sign out".
USERNAME = "Zoë_Øvergaard-Sørensen.podcasts@field-notes"
TITLE = (
    "Ünïcödé Öffentlichkeit — Die Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen "
    "im Gespräch: 日本語のポッドキャスト・長いタイトルの例、Ελληνικά και Русский язык, "
    "مرحبا بالعالم, and a plain English tail that goes on for a while"
)
EPISODE = "Ünïcödé Folge {n}: Über Schifffahrtsgesellschaftskapitänsmützen — ein Gespräch 🎧"
# 2,048 characters, the longest feed URL the service keeps.
LONG_URL = "https://feeds.example/" + "a-very-long-path-segment/" * 81
LONG_URL += "x" * (2048 - len(LONG_URL))
LONG_EPISODE_URL = "https://media.example/" + "e" * 1900 + ".mp3"
NEVER_SUBSCRIBED = "https://elsewhere.example/" + "ein-sehr-langer-pfad/" * 40 + "feed.xml"
DEVICES = 60
MADE = itertools.count(1)


@dataclass(frozen=True)
class Site:
    """What the pages show: made through the services, as apps and people make it."""

    titled: uuid.UUID  # a podcast with a long Unicode title, episodes, actions, a URL history
    never_subscribed: str  # the feed key of a podcast played and never subscribed to
    long: uuid.UUID  # a podcast known by its 2,048-character URL
    device: str
    deletion: int
    account_deletion: uuid.UUID
    flow: str
    app_password: int  # one an app has used
    import_done: int  # an import from a long address, with long refusals
    import_running: int
    reset: str  # the path of a reset link for the person, good until they sign in
    confirmation: str  # the token of a link confirming an address of theirs
    invitation: str  # the token of an invitation of theirs


@dataclass(frozen=True)
class Page:
    """One page of the site: its name (of its screenshot), its path for the data made, whether
    it is seen signed in, and what the person does there first (send a form, say)."""

    name: str
    path: Callable[[Site], str]
    signed_in: bool = True
    then: Callable[[WebDriver, Path], None] | None = None


def import_with_failures(browser: WebDriver, tmp_path: Path) -> None:
    """Import an OPML file of good feeds and bad ones: the page shows its summary."""
    opml = tmp_path / "phone.opml"
    bad = "ftp://" + "not-a-feed/" * 180
    outlines = "".join(
        f'<outline text="x" xmlUrl="{url}"/>'
        for url in (
            "https://imported.example/one.xml",
            LONG_URL,
            bad,
            "mailto:nobody@example.com",
            "",
        )
    )
    opml.write_text(
        f'<?xml version="1.0"?><opml version="2.0"><head/><body>{outlines}</body></opml>'
    )
    browser.find_element(By.NAME, "file").send_keys(str(opml))
    browser.find_element(By.CSS_SELECTOR, "form[enctype] button[type=submit]").click()
    browser.find_element(By.CSS_SELECTOR, ".summary")  # waits for the answer
    for details in browser.find_elements(By.CSS_SELECTOR, ".summary details"):
        browser.execute_script("arguments[0].open = true", details)


def make_app_password(browser: WebDriver, tmp_path: Path) -> None:
    """Make an app password (named anew each time): the page shows it once."""
    name = f"Pocket Casts on Zoë's phone 📱 {next(MADE)} " + "ü" * 40
    browser.find_element(By.NAME, "name").send_keys(name)
    browser.find_element(
        By.CSS_SELECTOR, "form[action$='/app-passwords/'] button[type=submit]"
    ).click()
    browser.find_element(By.CSS_SELECTOR, "code.password")


def sign_in_with_a_one_time_password(browser: WebDriver, tmp_path: Path) -> None:
    """Sign in as a member just added (named anew each time, at length) with the one-time
    password staff handed over: the answer asks for their own password."""
    username = f"Åsa-Lindqvist-{next(MADE)}." + "ö" * 100
    _, password = accounts.user_add(username=username)
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    browser.find_element(By.NAME, "password_again")  # waits for the answer


def make_invitation(browser: WebDriver, tmp_path: Path) -> None:
    """Make an invitation link: the page shows it once, above the invitations waiting."""
    browser.find_element(
        By.CSS_SELECTOR, "form[action$='/invitations/'] button[type=submit]"
    ).click()
    browser.find_element(By.CSS_SELECTOR, "main code")  # waits for the answer


def add_authenticator_app(browser: WebDriver, tmp_path: Path) -> None:
    """Ask to add an authenticator app: the answer shows its key, as a QR code and as text."""
    browser.find_element(By.ID, "app_password").send_keys(PASSWORD)
    browser.find_element(
        By.CSS_SELECTOR, "form[action$='/factors/app/'] button[type=submit]"
    ).click()
    browser.find_element(By.CSS_SELECTOR, "img.qr")  # waits for the answer


def confirm_authenticator_app(browser: WebDriver, tmp_path: Path) -> None:
    """Add an authenticator app, confirmed by the code it makes: the answer shows the recovery
    codes, once. The person has a second factor from here on."""
    add_authenticator_app(browser, tmp_path)
    device = TOTPDevice.objects.get(user__username=USERNAME, confirmed=False)
    browser.find_element(By.NAME, "code").send_keys(totp_code(device))
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    browser.find_element(By.CSS_SELECTOR, "ul.codes")  # waits for the answer


def sign_in_with_a_second_factor(browser: WebDriver, tmp_path: Path) -> None:
    """Give the password of an account with an authenticator app (named anew each time, at
    length): the answer asks for its code."""
    username = f"Åsa-Lindqvist-factor-{next(MADE)}." + "ö" * 100
    user: Any = UserFactory(username=username, with_password=PASSWORD)
    device = factors.app_begin(user=user)
    factors.app_confirm(user=user, device_id=device.pk, code=totp_code(device))
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    browser.find_element(By.NAME, "code")  # waits for the answer


# Every page of the site, signed out and in (docs/web.md). A page another part of the work adds
# is one line here.
PAGES = [
    Page("login", lambda s: "/login/", signed_in=False),
    Page("register", lambda s: "/register/", signed_in=False),
    Page("register-invited", lambda s: f"/register/{s.invitation}/", signed_in=False),
    Page("password-forgotten", lambda s: "/login/reset/", signed_in=False),
    Page("password-reset-link", lambda s: s.reset, signed_in=False),
    Page("link-dead", lambda s: "/login/reset/MQ/forged-token/", signed_in=False),
    Page(
        "password-choose",
        lambda s: "/login/",
        signed_in=False,
        then=sign_in_with_a_one_time_password,
    ),
    Page("login-second", lambda s: "/login/", signed_in=False, then=sign_in_with_a_second_factor),
    Page("login-flow-signed-out", lambda s: f"/login/flow/{s.flow}/", signed_in=False),
    Page("account-deleted", lambda s: f"/account/deleted/{s.account_deletion}/", signed_in=False),
    Page("not-found-signed-out", lambda s: "/no/such/page/", signed_in=False),
    Page("podcasts", lambda s: "/podcasts/"),
    Page("podcasts-page-2", lambda s: "/podcasts/?status=all&page=2"),
    Page("podcast", lambda s: f"/podcasts/{s.titled}/"),
    Page("podcast-long-url", lambda s: f"/podcasts/{s.long}/"),
    Page("deletion", lambda s: f"/deletions/{s.deletion}/"),
    Page("import-done", lambda s: f"/data/imports/{s.import_done}/"),
    Page("import-running", lambda s: f"/data/imports/{s.import_running}/"),
    Page("devices", lambda s: "/devices/"),
    Page("devices-page-2", lambda s: "/devices/?page=2"),
    Page("device", lambda s: f"/devices/{s.device}/"),
    Page("history", lambda s: "/history/"),
    Page("history-page-2", lambda s: "/history/?page=2"),
    Page("history-feed", lambda s: f"/history/feeds/{s.never_subscribed}/"),
    Page("podcast-history-page-2", lambda s: f"/podcasts/{s.titled}/?page=2"),
    Page("data", lambda s: "/data/"),
    Page("data-imported", lambda s: "/data/", then=import_with_failures),
    Page("account", lambda s: "/account/"),
    Page("account-app-password-made", lambda s: "/account/", then=make_app_password),
    Page("account-invitation-made", lambda s: "/account/", then=make_invitation),
    Page("address-confirm", lambda s: f"/account/address/{s.confirmation}/"),
    Page("account-delete", lambda s: "/account/delete/"),
    Page("login-flow", lambda s: f"/login/flow/{s.flow}/"),
    Page("not-found", lambda s: f"/podcasts/{uuid.UUID(int=1)}/"),
    Page("connect", lambda s: "/connect/"),
    Page("podcast-add", lambda s: "/podcasts/add/"),
    Page("podcast-delete", lambda s: f"/podcasts/{s.titled}/delete/"),
    Page("device-remove", lambda s: f"/devices/{s.device}/remove/"),
    Page("device-gone", lambda s: f"/devices/{'z' * 64}/remove/"),
    Page("app-password-revoke", lambda s: f"/account/app-passwords/{s.app_password}/revoke/"),
    Page("app-password-gone", lambda s: f"/account/app-passwords/{2**31 - 1}/revoke/"),
    # Last: from the recovery codes on, the person has a second factor.
    Page("factor-app-key", lambda s: "/account/", then=add_authenticator_app),
    Page("factor-recovery-codes", lambda s: "/account/", then=confirm_authenticator_app),
    Page("account-with-factors", lambda s: "/account/"),
]
NOT_FOUND = {"not-found", "not-found-signed-out", "device-gone", "app-password-gone"}

# The routes of web/urls.py that are no page of their own: forms post to them, or they download.
NOT_PAGES = {
    "home",  # sends the visitor on to /podcasts/ or /login/
    "logout",
    "subscription",
    "import",
    "import-file",
    "import-server",
    "export-opml",
    "export-json",
    "password",
    "app-password-create",
    "address",
    "invitation-create",
    "invitation-withdraw",
    "podcast-check",
    "factor-remove",
    "favicon",  # the site's icon, which browsers ask for at /favicon.ico
}
# The pages of PAGES, by the route they open.
LISTED = {
    "login": "login",
    "register": "register",
    "register-invited": "register-invited",
    "password-forgotten": "password-forgotten",
    "password-reset-link": "password-reset-link",
    "address-confirm": "address-confirm",
    "password-choose": "password-choose",
    "login-flow": "login-flow",
    "account-deletion": "account-deleted",
    "podcasts": "podcasts",
    "podcast": "podcast",
    "deletion": "deletion",
    "import-status": "import-done",
    "devices": "devices",
    "device": "device",
    "history": "history",
    "history-feed": "history-feed",
    "data": "data",
    "account": "account",
    "account-delete": "account-delete",
    "connect": "connect",
    "podcast-add": "podcast-add",
    "podcast-delete": "podcast-delete",
    "device-remove": "device-remove",
    "app-password-revoke": "app-password-revoke",
    "login-second": "login-second",
    "factor-app-add": "factor-app-key",
    "factor-app-confirm": "factor-recovery-codes",
    "factor-recovery-codes": "factor-recovery-codes",
}


# What each page is measured by, in the browser: how much wider than the screen the document
# is, the form controls and buttons that reach past either edge, and the lines the menu takes.
# Against the screen's width, not window.innerWidth: as a phone does, Chromium zooms out of a
# page wider than the screen, and innerWidth grows with it.
MEASURE = """
const width = arguments[0];
const cut = [];
for (const el of document.querySelectorAll(
    "input:not([type=hidden]), select, textarea, button, a.button, summary")) {
  const box = el.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) continue;
  if (box.right > width + 0.5 || box.left < -0.5) {
    cut.push(`${el.tagName.toLowerCase()} "${(el.innerText || el.name || "").trim().slice(0, 40)}"`
             + ` from ${Math.round(box.left)} to ${Math.round(box.right)}`);
  }
}
const tops = [];
for (const el of document.querySelectorAll(".top .brand, .top nav li, .top .signout button")) {
  const box = el.getBoundingClientRect();
  const middle = (box.top + box.bottom) / 2;
  if (!tops.some(t => Math.abs(t - middle) < 12)) tops.push(middle);
}
// What reaches past the right edge, innermost first: where to look when the page is too wide.
const past = [...document.body.querySelectorAll("*")]
  .filter(el => el.getBoundingClientRect().right > width + 0.5
          && ![...el.children].some(c => c.getBoundingClientRect().right > width + 0.5))
  .slice(0, 3)
  .map(el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
             + (typeof el.className === "string" && el.className.trim()
                ? "." + el.className.trim().split(/ +/).join(".") : "")
             + ` to ${Math.round(el.getBoundingClientRect().right)}`);
return {wider: document.documentElement.scrollWidth - width, cut: cut, menuLines: tops.length,
        past: past};
"""


def realistic_data(person: Any, feeds: FeedServer) -> Site:
    """What a person who has used the service for a while has."""
    # A podcast with a long Unicode title, read from its feed, with episodes in its catalogue;
    # it moved once, so it has a URL history.
    feeds.feed("/show.xml", feed(feeds, TITLE, 12))
    titled = subscribe(person, feeds.url("/old-show.xml"))
    titled = subscriptions.subscription_update(
        user=person,
        guid=titled.guid,
        change=SubscriptionUpdate(new_feed_url=feeds.url("/show.xml")),
    )
    feedchecks.feed_check_run(url=feeds.url("/show.xml"), user_id=person.pk)
    # One known by its 2,048-character URL, once at another URL and guid.
    long = subscribe(person, "https://feeds.example/before-it-moved.xml")
    long = subscriptions.subscription_update(
        user=person,
        guid=long.guid,
        change=SubscriptionUpdate(new_feed_url=LONG_URL, new_guid=uuid.uuid4()),
    )
    # Enough podcasts for two pages of the list, one of them unsubscribed.
    subscriptions.subscription_add_many(
        user=person,
        entries=[AddEntry(feed_url=f"https://podcasts.example/{n}/feed.xml") for n in range(55)],
    )
    subscriptions.subscription_unsubscribe_many(
        user=person, urls=["https://podcasts.example/3/feed.xml"]
    )
    # A deletion that failed, of the long one.
    deletion = Deletion.objects.create(
        user=person,
        subscription=long,
        guid=long.guid,
        status=Deletion.Status.FAILURE,
        message="The deletion process encountered an error and was rolled back",
        requested=long.subscription_changed,
    )
    # Many devices, some with long names and ids.
    device_ids = [f"device-{n:02d}" for n in range(DEVICES - 2)]
    long_device = "a" * 30 + "-" + "b" * 33
    gpodder.devices_touch(user=person, device_ids=[*device_ids, long_device, "phone"])
    gpodder.device_update(user=person, device_id="phone", caption="Zoë's phone", type="mobile")
    gpodder.device_update(
        user=person,
        device_id=long_device,
        caption="Wohnzimmer-Lautsprecheranlagensteuerungsgerät " + "🎧" * 20,
        type="server",
    )
    for n in range(0, DEVICES - 2, 3):
        gpodder.device_update(user=person, device_id=f"device-{n:02d}", caption=f"Gerät Nr. {n}")
    # App passwords, one named at length.
    for name in ("AntennaPod", "gPodder on the laptop", "Kasts " + "ä" * 90):
        used, _ = accounts.app_password_create(user=person, name=name)
    AppPassword.objects.filter(pk=used.pk).update(last_used=used.created)
    # What the apps played: of the titled podcast's episodes, on several devices; of a podcast
    # never subscribed to, known by its long URL; of a file the feed does not list.
    show = feeds.url("/show.xml")
    played = {"started": 0, "position": 600, "total": 1800}
    upload = [
        {
            "podcast": show,
            "episode": feeds.url(f"/ep{n}.mp3"),
            "action": "play",
            "device": device,
            "timestamp": f"2024-05-0{1 + n % 9}T08:00:00",
            **played,
        }
        for n in range(8)
        for device in ("phone", long_device)
    ]
    upload += [
        {"podcast": show, "episode": LONG_EPISODE_URL, "action": "download", "device": "phone"},
        {
            "podcast": LONG_URL,
            "episode": LONG_EPISODE_URL,
            "action": "play",
            "device": long_device,
            **played,
        },
    ]
    # Two pages of the titled podcast's history, with files the feed does not list; a podcast
    # never subscribed to, known by a long URL, with more episodes than the history shows; and
    # enough podcasts played for two pages of the history.
    upload += [
        {
            "podcast": show,
            "episode": f"{LONG_EPISODE_URL[:-4]}-{n}.mp3",
            "action": "download",
            "device": "phone",
        }
        for n in range(25)
    ]
    upload += [
        {
            "podcast": NEVER_SUBSCRIBED,
            "episode": f"https://media.example/{n}.mp3",
            "action": "new",
            "device": "phone",
        }
        for n in range(12)
    ]
    upload += [
        {
            "podcast": f"https://podcasts.example/{n}/feed.xml",
            "episode": "https://media.example/one.mp3",
            "action": "download",
            "device": "phone",
            "timestamp": "2024-04-01T08:00:00",
        }
        for n in range(10)
    ]
    episodes.actions_upload(user=person, actions=actions_parsed(upload, limit=200))
    # Another account, deleted: its status page, named by its long Unicode username.
    leaving: Any = UserFactory(username="Åsa-" + "ø" * 140)
    gone = deletions.account_deletion_request(user=leaving)
    # An app logging in with Nextcloud's login flow.
    started = flows.login_flow_start(
        client_name="AntennaPod/3.5.0 (Linux; Android 14; Pixel 8 Pro Build/AP2A.240805.005) "
        "okhttp/4.12.0",
        address="203.0.113.7",
    )
    # An import that ended with refusals of long URLs, and one under way.
    done = Import.objects.create(
        user=person, source="server", origin=LONG_URL, described=f"the gpodder API at {TITLE}",
        state="done", created=long.subscription_changed, finished=long.subscription_changed,
        action_count=120_000, actions_read=120_000, devices=12, podcasts_added=340,
        actions_imported=119_000, actions_already=900, refused=150,
        refusals=[{"what": f"podcast {LONG_URL[:200]}", "reason": "not usable as a feed's "
                   "address"}] * 3 + [{"what": "play of " + "ü" * 200, "reason": TITLE}],
    )  # fmt: skip
    running = Import.objects.create(
        user=person, source="file", origin="gpodder-net-" + "ä" * 80 + ".json",
        described="a gpodder.net episode-actions file", state="running",
        created=clock.now(), updated=clock.now(), action_count=50_000, actions_read=21_000,
    )  # fmt: skip
    uidb64, token = addresses.reset_link_parts(person)
    address = "zoe.overgaard@example.org"
    mark = addresses.state_mark(person)
    with override_settings(REGISTRATION="invitation", INVITATIONS_BY_MEMBERS=True):
        _, invited = invitations.invitation_create(user=person)
    return Site(
        reset=f"/login/reset/{uidb64}/{token}/",
        confirmation=addresses.confirmation_token(user=person, address=address, mark=mark),
        invitation=invited,
        import_done=done.pk,
        import_running=running.pk,
        titled=titled.guid,
        never_subscribed=feed_key_digest(NEVER_SUBSCRIBED),
        long=long.guid,
        device=long_device,
        deletion=deletion.pk,
        account_deletion=gone.key,
        flow=started.login_token,
        app_password=used.pk,
    )


def feed(server: FeedServer, title: str, count: int) -> bytes:
    items = "".join(
        f"<item><title>{EPISODE.format(n=n)}</title><guid>ep-{n}</guid>"
        f'<enclosure url="{server.url(f"/ep{n}.mp3")}" length="1" type="audio/mpeg"/>'
        f"<link>https://show.example/episodes/{n}</link>"
        f"<pubDate>Mon, {1 + n:02d} Apr 2024 12:00:00 GMT</pubDate>"
        "<itunes:duration>1:02:03</itunes:duration></item>"
        for n in range(count)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
        f"<channel><title>{title}</title><link>https://show.example/</link>{items}"
        "</channel></rss>"
    ).encode()


@pytest.fixture
def feeds(settings: Any) -> Iterator[FeedServer]:
    server = FeedServer().start()
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    try:
        yield server
    finally:
        server.stop()


def problems_of(
    browser: WebDriver, name: str, *, width: int, signed_in: bool, not_found: bool
) -> list[str]:
    """What is wrong with the page the browser shows, one line each."""
    found = []
    title = browser.title
    if not_found != ("not found" in title.lower()) or not count(browser, "#main"):
        found.append(f"{name}: the page is {title!r}")
    measured = browser.execute_script(MEASURE, width)
    if measured["wider"] > 0:
        found.append(
            f"{name}: scrolls sideways by {measured['wider']}px ({', '.join(measured['past'])})"
        )
    found += [f"{name}: cut off: {control}" for control in measured["cut"]]
    if signed_in and measured["menuLines"] > 2:
        found.append(f"{name}: the menu takes {measured['menuLines']} lines")
    found += [f"{name}: {violation}" for violation in accessibility_violations(browser)]
    found += [f"{name}: {lost}" for lost in table_semantics_lost(browser)]
    return found


def table_semantics_lost(browser: WebDriver) -> list[str]:
    """What screen readers would no longer read as a table, laid out as a list or not: each
    table, header and cell the page has is one in the accessibility tree."""
    if not count(browser, "main table"):
        return []
    tree = browser.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    roles = [node["role"]["value"] for node in tree if not node.get("ignored") and "role" in node]
    lost = []
    for tag, kinds in (
        ("table", {"table"}),
        ("th", {"columnheader", "rowheader"}),
        ("td", {"cell", "gridcell"}),
    ):
        elements = count(browser, f"main {tag}")
        read = sum(role in kinds for role in roles)
        if read < elements:
            lost.append(f"{elements} {tag} but {read} {' or '.join(sorted(kinds))}")
    return lost


def visit_all(
    browser: WebDriver, base: str, site: Site, pages: list[Page], tmp_path: Path
) -> list[str]:
    """Each page loaded once, then checked at each width in turn: Chromium lays the page out
    again when the emulated width changes, exactly as a load at that width does
    (test_a_page_shown_at_another_width_is_the_page_loaded_there), so one load and one axe-core
    parse serve the three widths."""
    found = []
    for page in pages:
        at_width(browser, WIDTHS[0])
        browser.get(base + page.path(site))
        if page.then is not None:
            page.then(browser, tmp_path)
        for width in WIDTHS:
            at_width(browser, width)
            found += problems_of(
                browser,
                f"{page.name} at {width}px",
                width=width,
                signed_in=page.signed_in,
                not_found=page.name in NOT_FOUND,
            )
            if width in PHONES or page.name in LAPTOP_SCREENSHOTS:
                whole_page_screenshot(browser, f"phone-{page.name}-{width}")
    at_width(browser, None)
    return found


def sign_in(browser: WebDriver, base: str) -> None:
    browser.get(f"{base}/login/")
    browser.find_element(By.NAME, "username").send_keys(USERNAME)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "the signed-in page")


def test_every_page_fits_a_phone_and_a_laptop(
    live_server: Any, browser: WebDriver, feeds: FeedServer, settings: Any, tmp_path: Path
) -> None:
    # Mail on (nothing is sent: no page here asks for mail), accounts by invitation, which
    # members make: every page and section of a public instance's.
    settings.MAIL_ENABLED = True
    settings.REGISTRATION = "invitation"
    settings.INVITATIONS_BY_MEMBERS = True
    person: Any = UserFactory(username=USERNAME, with_password=PASSWORD)
    site = realistic_data(person, feeds)

    signed_out = [page for page in PAGES if not page.signed_in]
    found = visit_all(browser, live_server.url, site, signed_out, tmp_path)
    sign_in(browser, live_server.url)
    signed_in = [page for page in PAGES if page.signed_in]
    found += visit_all(browser, live_server.url, site, signed_in, tmp_path)

    assert not found, "\n".join(found)


def shown(browser: WebDriver, width: int) -> tuple[Any, bytes]:
    """What the checks measure of the page at `width`, and the whole page's pixels."""
    shot = browser.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
    )
    return browser.execute_script(MEASURE, width), base64.b64decode(shot["data"])


def test_a_page_shown_at_another_width_is_the_page_loaded_there(
    live_server: Any, browser: WebDriver, feeds: FeedServer
) -> None:
    """What visit_all relies on: a page loaded at a phone's width and then shown at a laptop's
    measures and looks, pixel for pixel, as the page loaded at the laptop's, and the other way
    round. The devices page, with the realistic data: a table on a laptop, a list on a phone."""
    person: Any = UserFactory(username=USERNAME, with_password=PASSWORD)
    realistic_data(person, feeds)
    sign_in(browser, live_server.url)
    phone, laptop = PHONES[0], WIDTHS[-1]
    loaded = {}
    for width in (phone, laptop):
        at_width(browser, width)
        browser.get(f"{live_server.url}/devices/")
        loaded[width] = shown(browser, width)
    assert loaded[phone] != loaded[laptop]

    for first, then in ((phone, laptop), (laptop, phone)):
        at_width(browser, first)
        browser.get(f"{live_server.url}/devices/")
        at_width(browser, then)
        measured, pixels = shown(browser, then)
        assert measured == loaded[then][0], f"loaded at {first}px, shown at {then}px"
        assert pixels == loaded[then][1], f"loaded at {first}px, shown at {then}px: other pixels"


def test_the_checks_find_what_is_wrong_at_each_width(browser: WebDriver) -> None:
    """problems_of on a page with a fault of each kind it looks for, loaded once and checked at
    two widths, as visit_all does: axe-core, put in at the first check, still runs at the next."""
    browser.get(
        "data:text/html,<html lang=en><title>Faulty</title><main id=main>"
        "<img src='data:image/gif;base64,R0lGODlhAQABAAAAACw='>"
        "<div style='width:1500px'>wide</div><button style='margin-left:1450px'>Far</button>"
        "</main></html>"
    )
    for width in (PHONES[0], WIDTHS[-1]):
        at_width(browser, width)
        found = problems_of(browser, "faulty", width=width, signed_in=False, not_found=False)
        assert any("scrolls sideways" in problem for problem in found), found
        assert any('cut off: button "Far"' in problem for problem in found), found
        assert any("image-alt (critical)" in problem for problem in found), found
    at_width(browser, None)


# The admin's main pages, at a phone's width: Django's own responsive style sheets lay them
# out, and they are held to the same checks.
ADMIN_PAGES = [
    ("admin-index", lambda person: "/admin/"),
    ("admin-users", lambda person: "/admin/auth/user/"),
    ("admin-user", lambda person: f"/admin/auth/user/{person.pk}/change/"),
    ("admin-subscriptions", lambda person: "/admin/subscriptions/subscription/"),
    ("admin-overview", lambda person: "/admin/overview/"),
    ("admin-people", lambda person: "/admin/people/"),
]


def test_the_admins_main_pages_at_a_phones_width(live_server: Any, browser: WebDriver) -> None:
    staff: Any = UserFactory(
        username="staff", is_staff=True, is_superuser=True, with_password=PASSWORD
    )
    subscribe(staff, LONG_URL)
    browser.get(f"{live_server.url}/admin/login/?next=/admin/")
    browser.find_element(By.NAME, "username").send_keys("staff")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    wait_until(lambda: bool(browser.find_elements(By.ID, "user-tools")), 20, "the admin")
    found = []
    for name, path in ADMIN_PAGES:
        at_width(browser, PHONES[0])
        browser.get(live_server.url + path(staff))
        for width in PHONES:  # one load for both (as in visit_all)
            at_width(browser, width)
            found += problems_of(
                browser, f"{name} at {width}px", width=width, signed_in=False, not_found=False
            )
            whole_page_screenshot(browser, f"phone-{name}-{width}")
    assert not found, "\n".join(found)


def test_every_page_is_listed() -> None:
    """A page added to web/urls.py is added to PAGES (or, if it is no page, to NOT_PAGES)."""
    routes = {
        pattern.name
        for pattern in get_resolver("web.urls").url_patterns
        if isinstance(pattern, URLPattern) and pattern.name
    }
    listed = {page.name for page in PAGES}
    assert routes - NOT_PAGES - set(LISTED) == set(), "pages missing from PAGES"
    assert {LISTED[route] for route in routes & set(LISTED)} <= listed
