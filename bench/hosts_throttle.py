"""`make soak-hosts`, check 4: the throttle counted once across both hosts, and anonymous
clients behind nginx told apart by X-Forwarded-For."""

import threading
from collections import Counter
from typing import Any

from bench.harness import WORKERS
from bench.hosts_setup import (
    THROTTLE_RATE,
    Nginx,
    bearer,
    check,
    request,
    users,
)
from bench.soak import PASSWORD


def throttles(ports: dict[str, int], nginx: Nginx) -> None:
    rate = THROTTLE_RATE
    # Each web process may hold up to half the rate unsent (docs/api.md, "Throttling").
    bound = rate + len(ports) * WORKERS * rate // 2
    # One request at a time, what the processes hold unsent is a few requests: at most half as
    # many again. Many at once, they hold what each counted in its last interval: the count of
    # both hosts together must still stay under what two hosts counting alone would allow.
    limit, twice = rate * 3 // 2, 2 * rate
    print(f"\n4. throttle at {rate}/min per user, both hosts started again with it")
    alternate, concurrent = users(2)

    def token(user: Any) -> str:
        body = {"username": user.username, "password": PASSWORD}
        return str(request(ports["A"], "POST", "/v1/auth/login", body).json()["access_token"])

    # One request at a time, A and B in turn.
    first, refused = token(alternate), None
    allowed = 0
    for n in range(2 * rate):
        answer = request(
            list(ports.values())[n % 2],
            "GET",
            "/v1/subscriptions?per_page=1",
            headers=bearer(first),
        )
        allowed += answer.status == 200
        if answer.status == 429 and refused is None:
            refused = answer
    check(
        "throttle: one user, A and B in turn",
        f"{allowed} of {2 * rate} allowed",
        f"{rate} to {limit} (documented bound {bound})",
        rate <= allowed <= limit,
    )
    message = (refused.json() or {}).get("message", "") if refused else ""
    retry_after = refused.headers.get("retry-after", "") if refused else ""
    print(f"  429: {message!r}, Retry-After {retry_after}")
    check(
        "throttle: the 429 names the limit",
        repr(message),
        f"'{rate}/min requests per user', Retry-After",
        f"{rate}/min requests per user" in message and retry_after.isdigit(),
    )

    # Eight at once, four on each host.
    second, lock, counted = token(concurrent), threading.Lock(), Counter[int]()

    def send(port: int) -> None:
        for _ in range(rate // 2):
            status = request(
                port, "GET", "/v1/subscriptions?per_page=1", headers=bearer(second)
            ).status
            with lock:
                counted[status] += 1

    senders = [threading.Thread(target=send, args=(p,)) for p in list(ports.values()) * 4]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join()
    check(
        "throttle: one user, 8 clients at once on A and B",
        f"{counted[200]} of {sum(counted.values())} allowed ({counted[200] / rate:.2f} x rate)",
        f"{rate} to {twice - 1} (documented bound {bound})",
        rate <= counted[200] < twice,
    )

    # Anonymous requests through nginx, counted per client address: the one nginx puts in
    # X-Forwarded-For (NUM_PROXIES=1), not nginx's own, nor one the client forges.
    anonymous = 0
    for n in range(2 * rate):
        forged = {"X-Forwarded-For": f"198.51.100.{n % 250}"}
        answer = request(nginx.port, "GET", "/v1/capabilities", headers=forged, source="127.0.0.2")
        anonymous += answer.status == 200
    other = request(nginx.port, "GET", "/v1/capabilities", source="127.0.0.3").status
    check(
        "throttle: anonymous via nginx, forged X-Forwarded-For",
        f"{anonymous} of {2 * rate} allowed; another client address: {other}",
        f"{rate} to {limit}; 200",
        rate <= anonymous <= limit and other == 200,
    )
