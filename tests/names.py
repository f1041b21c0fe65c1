"""What routers, mDNS, Tailscale and a container's host call a machine at home
(docs/self-hosting.md, "Names"): the names every test of the home server's hosts sends."""

HOME_NETWORK_NAMES = [
    "mynas",  # a bare name: a router's DNS, or the host's own name seen from a container
    "diskstation",
    "nas.fritz.box",  # a FRITZ!Box
    "nas.home",
    "nas.localdomain",
    "nas.internal",
    "nas.lan",
    "raspberrypi.local",
    "podsync.home.arpa",
    "pi.tail1234.ts.net",  # Tailscale's MagicDNS
]
