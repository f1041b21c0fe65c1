"""`make soak-hosts`, check 2: an app password revoked, then a password changed, on A's pages:
what they ended is refused by both hosts at once."""

import threading
import time
from collections.abc import Callable
from typing import Any

from bench.hosts_setup import (
    AUTH_CACHE,
    NEW_PASSWORD,
    TRIES,
    Browser,
    basic,
    bearer,
    check,
    request,
    session,
    users,
)
from bench.soak import PASSWORD

Probe = Callable[[int], int]  # a request to a host's port: its status
REFUSED = (401, 403)


def statuses(
    probes: dict[str, Probe], ports: dict[str, int], tries: int = TRIES
) -> dict[str, list[int]]:
    """The statuses of `tries` requests of each probe on each host, by 'probe on host'; each
    request on a new connection, so that several web workers of each host answer."""
    return {
        f"{name} on {host}": [probe(port) for _ in range(tries)]
        for name, probe in probes.items()
        for host, port in ports.items()
    }


def credentials_of(user: Any, ports: dict[str, int], password: str) -> dict[str, Probe]:
    """What apps signed in with `password` (the account's or an app password) hold, as probes:
    a /v1/ access token and refresh token, a gpodder session cookie, and the password itself as
    Basic on gpodder and Nextcloud. Signed in on A and B both."""
    name = user.username
    tokens = request(
        ports["A"], "POST", "/v1/auth/login", {"username": name, "password": password}
    ).json()
    cookie = request(
        ports["B"], "POST", f"/api/2/auth/{name}/login.json", headers=basic(name, password)
    ).cookies["sessionid"]
    pull = f"/api/2/subscriptions/{name}/probe.json?since=0"
    nextcloud = "/index.php/apps/gpoddersync/subscriptions?since=0"
    return {
        "/v1/ access token": lambda port: (
            request(
                port, "GET", "/v1/subscriptions?per_page=1", headers=bearer(tokens["access_token"])
            ).status
        ),
        "gpodder cookie": lambda port: request(port, "GET", pull, headers=session(cookie)).status,
        "gpodder Basic": lambda port: (
            request(port, "GET", pull, headers=basic(name, password)).status
        ),
        "Nextcloud Basic": lambda port: (
            request(port, "GET", nextcloud, headers=basic(name, password)).status
        ),
        # Sent once to each host, after the change: a refresh token rotates when it works.
        "refresh token": lambda port: (
            request(
                port, "POST", "/v1/auth/refresh", {"refresh_token": tokens["refresh_token"]}
            ).status
        ),
    }


def warmed(probes: dict[str, Probe], ports: dict[str, int]) -> bool:
    """Every credential but the refresh token used on both hosts, so that each host's web
    workers remember the user, the token, the session and the Basic credentials; all 200."""
    used = {name: probe for name, probe in probes.items() if name != "refresh token"}
    return all(status == 200 for got in statuses(used, ports).values() for status in got)


def refused(probes: dict[str, Probe], ports: dict[str, int]) -> tuple[int, int, str]:
    """Every probe on both hosts (the refresh token once on each): how many requests were
    refused, of how many, and the probes that were not refused every time."""
    got = statuses({k: p for k, p in probes.items() if k != "refresh token"}, ports)
    if "refresh token" in probes:
        got.update(statuses({"refresh token": probes["refresh token"]}, ports, tries=1))
    no = sum(s in REFUSED for answered in got.values() for s in answered)
    asked = sum(len(answered) for answered in got.values())
    wanting = [
        f"{key}: {answered}"
        for key, answered in got.items()
        if any(s not in REFUSED for s in answered)
    ]
    return no, asked, "; ".join(wanting)


def revocation(ports: dict[str, int]) -> None:
    from accounts.models import AppPassword

    print("\n2. an app password revoked on A's page, then a password changed on A's page")
    user = users(1)[0]
    browser = Browser(ports["A"])
    browser.sign_in(user.username, PASSWORD)
    secret = browser.app_password("hosts soak")
    revoked_id = AppPassword.objects.get(user=user, name="hosts soak").pk
    probes = credentials_of(user, ports, secret)
    assert warmed(probes, ports), "the app password did not work on both hosts"
    revoke = browser.go("POST", f"/account/app-passwords/{revoked_id}/revoke/", {})
    assert revoke.status == 302, f"the revocation answered {revoke.status}"
    no, asked, wanting = refused(probes, ports)
    print(f"  after the revocation: {no} of {asked} requests refused ({wanting or 'all'})")
    check(
        "app password revoked: refused by both hosts at once",
        f"{no}/{asked} (token, refresh, cookie, gpodder and Nextcloud Basic; A and B)",
        "all",
        no == asked,
    )

    # A password changed: what was signed in with the old one ends.
    user = users(1)[0]
    browser = Browser(ports["A"])
    browser.sign_in(user.username, PASSWORD)
    probes = credentials_of(user, ports, PASSWORD)
    assert warmed(probes, ports), "the password did not work on both hosts"
    access = {"/v1/ access token": probes.pop("/v1/ access token")}
    changed = browser.go(
        "POST",
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    at = time.monotonic()
    assert changed.status == 302, f"the password change answered {changed.status}"
    first = statuses(access, ports)  # the old access token first, at once
    lag: dict[str, float] = {}  # then, beside the other probes, until each host refuses it

    def poll() -> None:
        while len(lag) < len(ports) and time.monotonic() < at + AUTH_CACHE + 10:
            for host, port in ports.items():
                started = time.monotonic()
                if host not in lag and refused(access, {host: port})[0] == TRIES:
                    lag[host] = started - at
            time.sleep(0.1)

    poller = threading.Thread(target=poll)
    poller.start()
    no, asked, wanting = refused(probes, ports)
    print(f"  the other probes were sent within {time.monotonic() - at:.1f} s of the change")
    poller.join()
    new = basic(user.username, NEW_PASSWORD)
    works = [
        request(
            port, "GET", f"/api/2/subscriptions/{user.username}/new.json?since=0", headers=new
        ).status
        for port in ports.values()
    ]
    print(
        f"  after the change: {no} of {asked} requests refused ({wanting or 'all'}); "
        f"the new password answered {works}"
    )
    check(
        "password changed: cookie, refresh token, old Basic refused by both at once",
        f"{no}/{asked} (refresh, cookie, gpodder and Nextcloud Basic; A and B)",
        "all",
        no == asked and works == [200, 200],
    )
    at_once = {h: sum(s in REFUSED for s in first[f"/v1/ access token on {h}"]) for h in ports}
    until = ", ".join(f"{h} {lag[h]:.1f} s" if h in lag else f"{h} never" for h in ports)
    check(
        "password changed: old /v1/ access token refused",
        "at once "
        + ", ".join(f"{h} {n}/{TRIES}" for h, n in at_once.items())
        + f"; all by {until}",
        "at once on both hosts (all refused on the first tries on A and B)",
        all(n == TRIES for n in at_once.values()),
    )
    if any(n < TRIES for n in at_once.values()):
        print(
            "  NOTE, not at once: a web process that remembers the user (accounts."
            "active.active_users) took an access token of the old password after the "
            "change: it did not hear the change's announcement (accounts.invalidation), or "
            "trusted its cache while not subscribed; see the hosts' logs"
        )
