"""Settings for every environment, read from the environment with django-environ.

Production needs no separate settings file: set `SECRET_KEY`, `DATABASE_URL`, `REDIS_URL` and
`ALLOWED_HOSTS`. Without them the service is the home server (docs/self-hosting.md): SQLite in
`data/`, tasks in-process, a secret key kept in `data/`, and the names a home network uses
accepted. That is what `make run` and the container image's default start.
"""

import ipaddress
from datetime import timedelta
from email.utils import formataddr
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import environ
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue
from whitenoise.compress import Compressor

from core.db import sqlite
from home import environment, proxies
from home.environment import StartError

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()

DEBUG = env.bool("DEBUG", default=False)
# The home server's database, secret key and nothing else (a container's volume).
DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "data")))
DATABASE = env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'db.sqlite3'}")
# No database named: the home server, on SQLite in DATA_DIR, with its own defaults below.
HOME_SERVER = "DATABASE_URL" not in env
if HOME_SERVER:
    try:
        DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as _error:
        raise StartError(
            f"Cannot make {DATA_DIR}: {_error.strerror}; make its parent writable by this user"
        ) from None

# Development may run on a throwaway key; the home server keeps one in its data folder; anything
# else must set one (every web host the same).
if "SECRET_KEY" in env or not (DEBUG or HOME_SERVER):
    SECRET_KEY = env.str("SECRET_KEY")
elif DEBUG:
    SECRET_KEY = "django-insecure-development-only-key"
else:
    SECRET_KEY = environment.secret_key(
        DATA_DIR, Path(DATABASE["NAME"]), new=env.bool("NEW_SECRET_KEY", default=False)
    )

# The address people and apps reach the service at (`https://sync.example.com`), for the
# absolute URLs given to apps that keep them (the Nextcloud login, docs/nextcloud.md). Empty: the
# address each request came to, as Django sees it (SECURE_PROXY_SSL_HEADER included).
PUBLIC_URL = env.str("PUBLIC_URL", default="").rstrip("/")
if PUBLIC_URL:  # a mistyped one fails at start, not in an app's login
    _public = urlsplit(PUBLIC_URL)
    if (
        _public.scheme not in ("http", "https")
        or not _public.hostname
        or _public.query
        or _public.fragment
    ):
        raise ValueError("PUBLIC_URL must be an http(s) address like https://sync.example.com")

# Where a phone on the home network reaches this machine, best first, as `manage.py serve`
# prints them: the Connect page gives the first when it was opened through localhost (docs/web.md,
# "Connecting an app"). In a container they are the container's own, which no phone reaches.
IN_CONTAINER = environment.in_container()
HOST_NAME = environment.host_name()
LAN_HOSTS = [] if IN_CONTAINER else environment.reachable_hosts(environment.listen_host())

# The home server takes the names a home network reaches it by (its addresses, its host name,
# the names under environment.HOME_DOMAINS; any single-label name and local address, api.hosts)
# with no configuration; anything else names its own. PUBLIC_URL's host is always among them,
# and its origin trusted for the pages' forms. ALLOWED_HOSTS replaces the defaults;
# EXTRA_ALLOWED_HOSTS adds to them (or to ALLOWED_HOSTS), in either layout.
ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS",
    default=environment.home_hosts() if HOME_SERVER else ["127.0.0.1", "localhost", "[::1]"],
)
if PUBLIC_URL and "ALLOWED_HOSTS" not in env:
    ALLOWED_HOSTS.append(_public.hostname or "")
EXTRA_ALLOWED_HOSTS = [host.strip().lower() for host in env.list("EXTRA_ALLOWED_HOSTS", default=[])]
ALLOWED_HOSTS += [host for host in EXTRA_ALLOWED_HOSTS if host and host not in ALLOWED_HOSTS]
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[PUBLIC_URL] if PUBLIC_URL else [])
# The name the pages and the admin go by (their header and titles).
SITE_NAME = env.str("SITE_NAME", default="Podcast sync").strip()
if not SITE_NAME:  # an empty header and titles would name nothing
    raise ValueError("SITE_NAME must not be empty: unset it for the default, Podcast sync")

# Passkeys need HTTPS (or localhost), and their library (py_webauthn, over cryptography and
# pyOpenSSL) adds about 25 MB to each web process: the home server, on plain HTTP, leaves them off
# unless set (docs/factors.md).
PASSKEYS = env.bool("PASSKEYS", default=not HOME_SERVER)

INSTALLED_APPS = [
    # Before the admin: its templates (admin/base_site.html, admin/index.html) are the ones
    # the admin renders.
    "staff",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework_simplejwt",
    "rest_framework_simplejwt.token_blacklist",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "api",
    "accounts",
    "subscriptions",
    "deletions",
    "feedchecks",
    "gpodder",
    "episodes",
    "nextcloud",
    "imports",
    "mail",
    "inactivity",
    # Second factors (docs/factors.md): authenticator apps and recovery codes by django-otp,
    # passkeys by django-otp-webauthn.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    *(["django_otp_webauthn"] if PASSKEYS else []),
    "factors",
    "web",
    "home",
]

MIDDLEWARE = [
    # The home server's LAN addresses and bare names, and /health from this machine, whatever
    # ALLOWED_HOSTS says; any other Host refused with a page that names the setting, first.
    "api.hosts.HostsMiddleware",
    # Kasts' `host//index.php/...` read as `/index.php/...`, before any path is looked at.
    "nextcloud.middleware.DoubledSlashMiddleware",
    # The proxy headers of a peer that is not a trusted proxy dropped, before anything reads them.
    "api.middleware.TrustedProxiesMiddleware",
    # The Nextcloud paths answered, not redirected, over plain HTTP where HTTPS is required.
    "nextcloud.middleware.NoRedirectToHttpsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "api.middleware.PrivateAnswersMiddleware",
    "api.middleware.BodySizeLimitMiddleware",
    # Secure cookies over HTTPS only: outside every middleware that sets one.
    "api.middleware.SecureCookiesOverHttpsMiddleware",
    # The apps' hot sync requests answered by the views' own functions, past every check above
    # and without the rest (docs/fast-path.md); any other request goes on to its view.
    # The account's activity noted once an app's credentials answered (accounts.activity): a
    # fast answer's too.
    "accounts.activity.ActivityMiddleware",
    "fastpath.middleware.FastPathMiddleware",
    # Django's session, user and message middleware, skipped for /v1/ requests.
    "api.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "api.middleware.AuthenticationMiddleware",
    "accounts.sessions.SessionSurfaceMiddleware",
    # The history file's larger body only from a person signed in, before CSRF parses it.
    "api.middleware.SignedInUploadMiddleware",
    "api.middleware.MessageMiddleware",
    # Which factor verified a browser's session, and staff held to the Account page until they
    # have one where STAFF_REQUIRE_TWO_FACTORS says so.
    "factors.middleware.FactorsMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "api.middleware.CSPMiddleware",
    # A page's body that stopped arriving is the client's 408, not a 500.
    "api.middleware.BodyNotReceivedMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "web.context.section",
                "web.context.site_name",
            ],
        },
    },
]

DATABASES = {"default": DATABASE}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("CONN_HEALTH_CHECKS", default=True)
POSTGRESQL_ENGINE = "core.db.postgresql"  # its health check costs no round trip
# How a connection pooler between the service and PostgreSQL hands out server connections:
# `session` (none, or PgBouncer's session mode) or `transaction` (PgBouncer's transaction mode).
DATABASE_POOL_MODE = env.str("DATABASE_POOL_MODE", default="session")
if DATABASE_POOL_MODE not in ("session", "transaction"):
    raise ValueError("DATABASE_POOL_MODE must be session or transaction")
POOLED_BY_TRANSACTION = DATABASE_POOL_MODE == "transaction"
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = POSTGRESQL_ENGINE
    # The backend's bound cursors (the hottest reads, written out in SQL) are prepared once run five
    # times on a connection (psycopg's default, which Django turns off): the server plans a GET's
    # query once per connection instead of on every request (bench/README.md,
    # "core.db.postgresql.DatabaseWrapper.bound_cursor"). The ORM's cursors bind parameters on the
    # client and are never prepared. Turn it off behind a pooler that cannot keep prepared
    # statements (PgBouncer in transaction mode before 1.21, or without max_prepared_statements).
    if env.bool("DATABASE_PREPARED_STATEMENTS", default=True) and not POOLED_BY_TRANSACTION:
        DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5
    # Behind a pooler in transaction mode a connection is the server's for one transaction only:
    # nothing may outlive it (docs/operations.md, "PgBouncer"). No prepared statement (above),
    # and no server-side cursor (Django's `.iterator()` would hold one open between
    # transactions); the advisory locks are per transaction already.
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = POOLED_BY_TRANSACTION
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    sqlite.postgres_fields_refused()
    # Take the write lock at BEGIN so concurrent writers queue instead of failing mid-transaction,
    # for up to 20 s (the busy timeout). WAL lets reads go on beside the writer; synchronous=FULL
    # makes each commit durable before it is answered, through a power cut on an SD card too.
    # Each thread keeps its connection (CONN_MAX_AGE, as on PostgreSQL): opening one costs about
    # 0.7 ms of CPU (Django's SQL functions registered, these pragmas, the schema read again),
    # a tenth of a sync request's whole. A kept one holds its page cache and its compiled
    # statements, capped (512 KiB, 16 statements) so that the home server keeps within its
    # memory (bench/HISTORY.md, "The home server's connections").
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "cached_statements": 16,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA cache_size=-512",
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
# Source maps are read by a browser's developer tools only: compressing them (14 MB, most of
# them the API documents' bundles) took half of collectstatic's time, which the home server's
# first start and the image's build pay.
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = (*Compressor.SKIP_COMPRESS_EXTENSIONS, "map")

# --- Limits (docs/api.md, "Limits") -------------------------------------------------------
MAX_BODY_BYTES = env.int("MAX_BODY_BYTES", default=1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES
# A body sent to the pages or the admin: an OPML file of MAX_BODY_BYTES with its multipart
# envelope and the form's fields. Refused before it is read, so nothing is spooled to disk.
MAX_PAGE_BODY_BYTES = env.int("MAX_PAGE_BODY_BYTES", default=MAX_BODY_BYTES + 64 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = MAX_PAGE_BODY_BYTES
# How much of a body over the limit is read (and dropped) before the 413, so that the client,
# still sending, can read it; beyond this the connection may be reset.
BODY_DISCARD_BYTES = env.int("BODY_DISCARD_BYTES", default=64 * 1024 * 1024)
MAX_ADD_ENTRIES = env.int("MAX_ADD_ENTRIES", default=500)
# Feeds per OPML import: higher than an add's, since an app's export is sent whole and a body
# of 1 MiB holds some thousands of outlines; the add takes the same queries for any number.
MAX_OPML_ENTRIES = env.int("MAX_OPML_ENTRIES", default=5000)
# The most episode actions one upload may hold (an app's first sync sends one per played episode).
MAX_EPISODE_ACTIONS = env.int("MAX_EPISODE_ACTIONS", default=5000)
MAX_PAGE_SIZE = env.int("MAX_PAGE_SIZE", default=500)
# The Retry-After of a 503 answered while the database cannot serve (seconds).
DATABASE_RETRY_AFTER = env.int("DATABASE_RETRY_AFTER", default=5)
MAX_FEED_URL_LENGTH = 2048

# --- Cache: shared by every web process when Redis is there, so throttles hold across them.
REDIS_URL = env.str("REDIS_URL", default="")


def _next_redis_database(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{int(parts.path.strip('/') or 0) + 1}"))


# Another database than the broker's by default: clearing the cache must not empty the queues.
REDIS_CACHE_URL = env.str(
    "REDIS_CACHE_URL", default=_next_redis_database(REDIS_URL) if REDIS_URL else ""
)
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_CACHE_URL}
        if REDIS_CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# --- API ---------------------------------------------------------------------------------
# Paths whose every error is the error object, and whose bodies the body limit guards: the OPA
# API, the gpodder.net API's advanced and simple parts (docs/gpodder-api.md), and the Nextcloud
# gPodder Sync API with and without /index.php (docs/nextcloud.md).
API_PATH_PREFIXES = (
    "/v1/",
    "/api/2/",
    "/subscriptions/",
    "/index.php/apps/gpoddersync/",
    "/apps/gpoddersync/",
    "/index.php/login/v2",
    "/login/v2",
)
# The realm of the gpodder API's 401s: mygpoclient sends credentials only to a 401 that has one.
GPODDER_REALM = env.str("GPODDER_REALM", default="opa-subscriptions")
# How long a web process remembers Basic credentials it verified (an Argon2 check each time
# otherwise); a changed password or a deactivation ends them at once. 0: check every time.
GPODDER_CREDENTIAL_CACHE_SECONDS = env.int("GPODDER_CREDENTIAL_CACHE_SECONDS", default=300)
# The apps' hot sync requests answered without Django's view stack when they can be
# (docs/fast-path.md); false sends every request through its view.
FAST_PATH = env.bool("FAST_PATH", default=True)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.BearerAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.ContentNegotiation",
    "DEFAULT_THROTTLE_CLASSES": ["api.throttles.UserThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env.str("THROTTLE_USER_RATE", default="1200/min"),
        "login": env.str("THROTTLE_LOGIN_RATE", default="10/min"),
        "registration": env.str("THROTTLE_REGISTRATION_RATE", default="5/hour"),
        # Nextcloud logins started (POST /login/v2) per client address: each is a row for 20
        # minutes; a phone retrying a few times stays far below it, even behind a shared address.
        "login_flow": env.str("THROTTLE_LOGIN_FLOW_RATE", default="30/hour"),
        # Feed checks a person asks for on a podcast's page, per account: each fetches a server
        # that is not ours, whenever it was fetched last (feedchecks.throttles).
        "feed_check": env.str("THROTTLE_FEED_CHECK_RATE", default="10/hour"),
        # Mail a form sends (a password reset, an address to confirm), per client address and
        # again per address written to or account (accounts.throttles.count_mail_request).
        "mail": env.str("THROTTLE_MAIL_RATE", default="5/hour"),
    },
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # Read X-Forwarded-For as this many proxies in front wrote it: throttles key on the address.
    # 0 ignores it; from a peer not in TRUSTED_PROXIES it is dropped whatever this says. The
    # image believes a proxy on its host by default (home.proxies), so it reads what that wrote.
    "NUM_PROXIES": env.int("NUM_PROXIES", default=1 if proxies.in_container() else 0),
}
# The peers whose X-Forwarded-For and X-Forwarded-Proto are believed, addresses or networks
# (api.middleware.TrustedProxiesMiddleware): by default a proxy on this machine, and in the image
# one on its host, which arrives from the container network's gateway (home.proxies). From any
# other peer both are dropped, so a client that reaches the server directly chooses neither the
# address the throttles count nor HTTPS. gunicorn trusts the same peers (config/gunicorn.py).
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=proxies.default_trusted_proxies())
for _proxy in TRUSTED_PROXIES:  # a mistyped one fails at start, as gunicorn's check would
    if _proxy.strip():
        ipaddress.ip_network(_proxy.strip())

SIMPLE_JWT = {
    "ACCESS_TOKEN_LIFETIME": timedelta(seconds=env.int("ACCESS_TOKEN_LIFETIME", default=3600)),
    "REFRESH_TOKEN_LIFETIME": timedelta(
        seconds=env.int("REFRESH_TOKEN_LIFETIME", default=30 * 24 * 3600)
    ),
    "ROTATE_REFRESH_TOKENS": True,
    "BLACKLIST_AFTER_ROTATION": True,
    "UPDATE_LAST_LOGIN": True,
    "AUTH_HEADER_TYPES": ("Bearer",),
}
# Who makes accounts (docs/public-instance.md, "Registration"): staff only ("closed"), people
# given an invitation link ("invitation"), or anyone on the registration page ("open").
# REGISTRATION_OPEN=true, the setting before it, still means "open".
REGISTRATION = env.str(
    "REGISTRATION", default="open" if env.bool("REGISTRATION_OPEN", default=False) else "closed"
)
if REGISTRATION not in ("closed", "invitation", "open"):
    raise StartError("REGISTRATION must be closed, invitation or open")
# With REGISTRATION=invitation, members make invitation links too, not only staff.
INVITATIONS_BY_MEMBERS = env.bool("INVITATIONS_BY_MEMBERS", default=False)
# How long an invitation link works (days), and how many unused ones an account may hold.
INVITATION_DAYS = env.int("INVITATION_DAYS", default=7)
if INVITATION_DAYS < 1:
    raise StartError("INVITATION_DAYS must be 1 or more")
MAX_OPEN_INVITATIONS = env.int("MAX_OPEN_INVITATIONS", default=20)
# App passwords per account (docs/web.md, "Account and app passwords").
MAX_APP_PASSWORDS = env.int("MAX_APP_PASSWORDS", default=50)
# Devices per account (docs/gpodder-api.md, "Devices"): each app install names one, and a
# reinstall often a new one, so a person gathers some in a few years; 100 leaves room for that
# and bounds the device lists, which the gpodder API answers whole.
MAX_DEVICES = env.int("MAX_DEVICES", default=100)
# The most episode actions one import brings (docs/imports.md): a listening history of years
# is tens of thousands.
IMPORT_MAX_ACTIONS = env.int("IMPORT_MAX_ACTIONS", default=1_000_000)
# An import from another server: its whole time, and its episode-actions answer's size (a
# million actions is about 250 MB of JSON); the other answers are read up to 10 MB.
IMPORT_TIMEOUT = env.float("IMPORT_TIMEOUT", default=600.0)
IMPORT_MAX_ANSWER_BYTES = env.int("IMPORT_MAX_ANSWER_BYTES", default=512 * 1024 * 1024)
# The import task's own time limits (imports.tasks), not CELERY_TASK_TIME_LIMIT's: a backstop
# past what the run bounds itself. Its reading of a server ends at IMPORT_TIMEOUT; writing what
# it read, IMPORT_MAX_ACTIONS at most, is given a second for every 2,000 of them, six times what
# it takes (bench/README.md: 13,000 a second). At the soft limit the run ends as failed, saying
# so; the hard one, a minute later, stops a run that did not end then.
IMPORT_TASK_SOFT_TIME_LIMIT = IMPORT_TIMEOUT + IMPORT_MAX_ACTIONS / 2000
IMPORT_TASK_TIME_LIMIT = IMPORT_TASK_SOFT_TIME_LIMIT + 60
# Imports a person may start in a day, one at a time; and the largest file the page takes.
IMPORT_MAX_PER_DAY = env.int("IMPORT_MAX_PER_DAY", default=20)
IMPORT_MAX_FILE_BYTES = env.int("IMPORT_MAX_FILE_BYTES", default=256 * 1024 * 1024)
# Each device's last sync requests, for its page (docs/web.md, "Devices"): one write per sync
# request. False writes none, and the pages have nothing to show (bench/README.md measures both).
DEVICE_SYNC_EVENTS = env.bool("DEVICE_SYNC_EVENTS", default=True)
# True: those writes made after the answer, by one writer thread per process (core.db.later),
# not inside the request; a crash may lose the last moment's notes, never a sync. Off by
# default: measured beside the peers it answered no faster and cost more CPU (docs/sync.md).
SYNC_NOTES_AFTER_ANSWER = env.bool("SYNC_NOTES_AFTER_ANSWER", default=False)
# How long a web process may remember that a token's user is active before reading it again
# (accounts.active.active_users); a change of password or a deactivation is announced to
# every process through Redis at once (accounts.invalidation). 0 reads it on every request.
AUTH_USER_CACHE_SECONDS = env.int("AUTH_USER_CACHE_SECONDS", default=10)
# How long a web process may hold the requests it counted before adding them to the shared
# counts in Redis, while a client has used at most half its rate (api.throttles); 0 sends
# every request's count at once.
THROTTLE_SYNC_SECONDS = env.float("THROTTLE_SYNC_SECONDS", default=0.1)

SPECTACULAR_SETTINGS = {
    "TITLE": "Open Podcast API: subscriptions",
    "DESCRIPTION": (
        "The subscriptions core of the Open Podcast API. Every error is "
        '`{"code": "<HTTP status>", "message": "..."}`; input that cannot be validated is 405.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "subscriptions.openapi.strict_request_bodies",
    ],
}

# --- Deletions (docs/api.md, "Deletion") -------------------------------------------------------
# A deletion still PENDING this long after it was sent is sent again by the sweep ...
DELETION_RESEND_AFTER = env.int("DELETION_RESEND_AFTER", default=60)
# ... which fails it once it has been sent this many times ...
DELETION_MAX_SENDS = env.int("DELETION_MAX_SENDS", default=12)
# ... and a worker fails it once workers have started on it this many times.
DELETION_MAX_ATTEMPTS = env.int("DELETION_MAX_ATTEMPTS", default=5)
# The sweep runs this often. A deletion whose send failed (the broker was away) goes at its next
# run; one lost, or taken by a worker that died, DELETION_RESEND_AFTER after its send, once the
# deletions' queue is empty: within about a minute and a half of the broker or a worker coming back.
DELETION_SWEEP_INTERVAL = env.float("DELETION_SWEEP_INTERVAL", default=20.0)
DELETION_SWEEP_BATCH = env.int("DELETION_SWEEP_BATCH", default=1000)

# --- Feed identity checks (docs/api.md, "Feed identity") -------------------------------------
# On by default: a worker runs them; without a broker (no REDIS_URL), a background thread of
# the web process does, so that the request adding a feed never waits for its fetch.
FEED_CHECKS_ENABLED = env.bool("FEED_CHECKS_ENABLED", default=True)
# The web process's threads that run checks without a broker; 0 runs them in the request, after
# its commit (the tests that follow a check step by step).
FEED_CHECK_THREADS = env.int("FEED_CHECK_THREADS", default=2)
# A feed URL is fetched at most once per this many seconds, whoever subscribes to it.
FEED_CHECK_INTERVAL = env.int("FEED_CHECK_INTERVAL", default=24 * 3600)
# How often the sweep looks for feeds whose fetch failed FEED_CHECK_INTERVAL ago or more, to
# check them again (Celery beat, or the home server's schedule).
FEED_RETRY_SWEEP_INTERVAL = env.float("FEED_RETRY_SWEEP_INTERVAL", default=3600.0)
# Networks the fetcher may reach although they are not public, e.g. 127.0.0.0/8 in tests.
FEED_FETCH_ALLOWED_NETWORKS = env.list("FEED_FETCH_ALLOWED_NETWORKS", default=[])
for _network in FEED_FETCH_ALLOWED_NETWORKS:  # a mistyped CIDR fails at start, not in each task
    ipaddress.ip_network(_network.strip(), strict=False)
# The networks an import from another server may reach beside the public ones: a home server
# importing from a box on its LAN names it here (docs/imports.md). The feed fetches' by default.
IMPORT_ALLOWED_NETWORKS = env.list("IMPORT_ALLOWED_NETWORKS", default=FEED_FETCH_ALLOWED_NETWORKS)
for _network in IMPORT_ALLOWED_NETWORKS:  # a mistyped CIDR fails at start
    ipaddress.ip_network(_network.strip(), strict=False)
FEED_FETCH_CONNECT_TIMEOUT = env.float("FEED_FETCH_CONNECT_TIMEOUT", default=5.0)
FEED_FETCH_TIMEOUT = env.float("FEED_FETCH_TIMEOUT", default=20.0)
FEED_FETCH_MAX_BYTES = env.int("FEED_FETCH_MAX_BYTES", default=5 * 1024 * 1024)
# A feed's newest this many episodes are kept, to name what apps played (docs/web.md, "Episodes
# by name"): a feed of twenty years of daily episodes does not grow the catalogue without end.
FEED_EPISODES_KEPT = env.int("FEED_EPISODES_KEPT", default=1000)
if FEED_EPISODES_KEPT < 0:
    raise ValueError("FEED_EPISODES_KEPT must be 0 (keep none) or more")

# --- Mail (docs/public-instance.md) -------------------------------------------------------
# The account mail (a password reset, an address to confirm) goes out through EMAIL_URL:
# smtp://user:password@host:587, smtp+tls:// (STARTTLS), smtp+ssl:// (TLS from the first byte),
# or consolemail:// (printed by the process that sends it). Unset, the home server's default:
# no flow depends on mail, and each page that would send some says what staff can do instead.
EMAIL_URL = env.str("EMAIL_URL", default="")
MAIL_ENABLED = bool(EMAIL_URL)
if MAIL_ENABLED:
    # A link in a mail names the address people reach the service at, never the Host header of
    # the request that asked for it: whoever asks for another person's reset chooses that one.
    if not PUBLIC_URL:
        raise StartError(
            "EMAIL_URL needs PUBLIC_URL, the address the links in mail lead to "
            "(https://sync.example.com)"
        )
    try:
        globals().update(environ.Env.email_url_config(EMAIL_URL))
    except (ImproperlyConfigured, ValueError) as _error:
        raise StartError(
            "EMAIL_URL must look like smtp://user:password@host:587, smtp+tls://, smtp+ssl:// "
            "or consolemail://"
        ) from _error
# A mail server that does not answer holds the sending worker this long per attempt, not for ever.
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=20)
DEFAULT_FROM_EMAIL = env.str(
    "DEFAULT_FROM_EMAIL",
    default=formataddr((SITE_NAME, f"noreply@{_public.hostname}")) if PUBLIC_URL else "",
)
if MAIL_ENABLED and not DEFAULT_FROM_EMAIL:
    raise StartError("DEFAULT_FROM_EMAIL must not be empty when EMAIL_URL is set")
# Without a broker (the home server), mail is sent by a thread of the web process, never inside
# the request that asked for it.
MAIL_IN_THREAD = env.bool("MAIL_IN_THREAD", default=not REDIS_URL)
# Mail that could not be sent is tried again by the sweep, this often (seconds).
MAIL_SWEEP_INTERVAL = env.float("MAIL_SWEEP_INTERVAL", default=60.0)
# How long a reset link works (seconds); it also dies once used, or once the password changes.
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_RESET_TIMEOUT", default=2 * 3600)
# How long a link confirming an address works (seconds).
EMAIL_CONFIRM_TIMEOUT = env.int("EMAIL_CONFIRM_TIMEOUT", default=3 * 24 * 3600)

# --- Inactive accounts (docs/public-instance.md) ---------------------------------------------
# Off unless set: an account unused this many days (no sign-in, no app's sync on any API) is
# suspended, INACTIVE_WARNING_DAYS after its person was warned by mail (where there is mail and
# an address). Nothing of it is deleted; its person signs in to lift it. Staff are never
# suspended.
INACTIVE_ACCOUNT_DAYS = env.int("INACTIVE_ACCOUNT_DAYS", default=0)
INACTIVE_WARNING_DAYS = env.int("INACTIVE_WARNING_DAYS", default=14)
if INACTIVE_ACCOUNT_DAYS < 0 or (
    INACTIVE_ACCOUNT_DAYS and not 1 <= INACTIVE_WARNING_DAYS < INACTIVE_ACCOUNT_DAYS
):
    raise StartError(
        "INACTIVE_ACCOUNT_DAYS must be 0 (off) or more days than INACTIVE_WARNING_DAYS, "
        "which must be at least 1"
    )
INACTIVITY_SWEEP_INTERVAL = env.float("INACTIVITY_SWEEP_INTERVAL", default=3600.0)

# --- Second factors (docs/factors.md) --------------------------------------------------------
# How long the second step of a sign-in waits after the password was given (seconds).
FACTOR_STEP_SECONDS = env.int("FACTOR_STEP_SECONDS", default=300)
# Staff reach only their Account page until they have a passkey or an authenticator app, and
# sign in with it.
STAFF_REQUIRE_TWO_FACTORS = env.bool("STAFF_REQUIRE_TWO_FACTORS", default=False)
OTP_TOTP_ISSUER = SITE_NAME
OTP_WEBAUTHN_RP_NAME = SITE_NAME
# A passkey belongs to the host name the browser used (its relying party), and is checked
# against the page's own origin: the home server has as many names as its network gives it.
OTP_WEBAUTHN_RP_ID_CALLABLE = "factors.webauthn.rp_id"
OTP_WEBAUTHN_HELPER_CLASS = "factors.webauthn.Helper"
# A passkey is a second factor after the password, never a sign-in alone.
OTP_WEBAUTHN_ALLOW_PASSWORDLESS_LOGIN = False

# --- Celery ----------------------------------------------------------------------------------
# Without REDIS_URL, tasks run in-process right after the commit that sent them.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
# Without a broker (the home server), an import runs in a thread of the web process, so that
# its page shows the progress (docs/imports.md).
IMPORT_IN_THREAD = env.bool("IMPORT_IN_THREAD", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=300)
CELERY_TASK_SOFT_TIME_LIMIT = max(1, CELERY_TASK_TIME_LIMIT * 9 // 10)
# Redis redelivers an unacknowledged message after this; it must outlast the longest task.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_TASK_TIME_LIMIT * 4,
    # Look for a dead worker's messages every 10 s (kombu's default scans one tick in ten), so
    # they come back within about 10 s of their visibility timeout.
    "unacked_restore_throttle": 1,
    # A scan takes milliseconds; kombu's default lock of 300 s would, should a worker die
    # mid-scan, hold every other worker's redelivery back for five minutes.
    "unacked_mutex_expire": 30,
    "socket_connect_timeout": 3,
    "socket_timeout": 10,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 3
# A request must not hang on a broker that is down: one quick retry, then the sweep's turn.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5}
# One queue per kind of work, so a backlog of one never delays another. A worker started
# without -Q consumes all of them.
QUEUES = ("celery", "deletions", "feeds", "imports")
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = tuple(Queue(name, Exchange(name), routing_key=name) for name in QUEUES)
CELERY_BEAT_SCHEDULE = {
    "sweep-deletions": {
        "task": "deletions.tasks.sweep_deletions",
        "schedule": DELETION_SWEEP_INTERVAL,
    },
    "send-mail": {"task": "mail.tasks.sweep_mail", "schedule": MAIL_SWEEP_INTERVAL},
    "sweep-inactive-accounts": {
        "task": "inactivity.tasks.sweep_inactive_accounts",
        "schedule": INACTIVITY_SWEEP_INTERVAL,
    },
    "retry-failed-feeds": {
        "task": "feedchecks.tasks.retry_failed_feeds",
        "schedule": FEED_RETRY_SWEEP_INTERVAL,
    },
}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"

# --- Security -------------------------------------------------------------------------------
# The home server speaks plain HTTP on its LAN; the full layout sits behind a TLS proxy.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not (DEBUG or HOME_SERVER))
# Load balancers probe over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^health$"]
# The proxy's word that the request came over HTTPS, from TRUSTED_PROXIES only.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Secure over HTTPS only, decided per request (api.middleware.SecureCookiesOverHttpsMiddleware):
# a plain-HTTP deployment (SECURE_SSL_REDIRECT=false on a LAN) must get its cookies back.
# Database sessions, an app's remembered by the web process that read it (accounts.sessions).
SESSION_ENGINE = "accounts.sessions"
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# The account holders' pages and the admin (docs/web.md, "Security"): no inline script or
# style, no framing, forms post only here. /v1/ answers JSON and skips it (so its docs page,
# which runs inline set-up code, keeps working). Artwork comes from each podcast's own host,
# over http or https, sent without a referrer (the templates say so on each image).
SELF = "'self'"
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "https:", "http:", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": [SELF],
        "frame-ancestors": ["'none'"],
    }
}
LOGIN_URL = "web:login"
LOGIN_REDIRECT_URL = "web:podcasts"
LOGOUT_REDIRECT_URL = "web:login"
# HSTS for subdomains and preloading commit every host of the domain: the operator opts in.
SILENCED_SYSTEM_CHECKS = env.list(
    # otp_webauthn.E030 asks for a fixed list of origins: factors.webauthn.Helper takes the
    # request's own.
    "SILENCED_SYSTEM_CHECKS",
    default=["security.W005", "security.W021", "otp_webauthn.E030"],
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "line": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "filters": {
        "expected_401": {"()": "api.logs.ExpectedUnauthorized"},
        "one_line": {"()": "api.logs.OneLine"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "line",
            # Every gpodder app's sync starts with a 401 that asks for its credentials: expected,
            # so not a warning; a refused Host is one line (api.logs).
            "filters": ["expected_401", "one_line"],
        },
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
