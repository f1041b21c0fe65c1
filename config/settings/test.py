"""Test settings: the base settings on a real PostgreSQL that tests/conftest.py starts."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-that-is-long-enough-for-hs256-signing")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")

from .base import *  # noqa: F403
from .base import POOLED_BY_TRANSACTION, POSTGRESQL_ENGINE, env

# tests/conftest.py fills HOST and PORT with the server it starts, unless
# TEST_DATABASE_URL points at one that is already running.
DATABASES = {
    "default": env.db_url("TEST_DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/opa"),
}
DATABASES["default"]["CONN_MAX_AGE"] = 0
# PostgreSQL: the full layout's defaults, not the home server's (tests/home tests those).
HOME_SERVER = False
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
DATABASES["default"]["ENGINE"] = POSTGRESQL_ENGINE
# As deployed: prepared lookups, unless through PgBouncer in transaction mode (make test's
# pooled slice, tests/conftest.py).
DATABASES["default"]["OPTIONS"] = {} if POOLED_BY_TRANSACTION else {"prepare_threshold": 5}
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = POOLED_BY_TRANSACTION

# make test's home slice: the API and page suites again on SQLite, under the home server's
# settings (its busy timeout, WAL and synchronous=FULL), in a file as the home server keeps one.
if env.bool("TEST_HOME_SERVER", default=False):
    from .base import DATABASE as HOME_DATABASE

    DATABASES = {"default": {**HOME_DATABASE, "CONN_MAX_AGE": 0}}
    _name = env.str("TEST_SQLITE_NAME", default=str(DATA_DIR / "test.sqlite3"))  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": _name}
    HOME_SERVER = True

# Passkeys as each layout has them (the base settings decided on SQLite's home server, before
# the database above was chosen).
PASSKEYS = env.bool("PASSKEYS", default=not HOME_SERVER)
INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "django_otp_webauthn"]  # noqa: F405
if PASSKEYS:
    INSTALLED_APPS.insert(INSTALLED_APPS.index("factors"), "django_otp_webauthn")

# The transactional tests' flush keeps the content types and permissions (tests/testdb).
INSTALLED_APPS = ["tests.testdb", *INSTALLED_APPS]

# Argon2id as deployed (the same name and format; tests/accounts checks the deployed list), at
# the smallest cost: at Argon2's own (100 MB, two passes, per hash) the suite spent most of its
# time hashing the passwords of the people its tests sign in.
PASSWORD_HASHERS = ["tests.hashers.QuickArgon2PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Each test's client loads the middleware afresh, and WhiteNoise, as deployed, reads every file
# under STATIC_ROOT as it loads: a sixth of a second a test, a third of an API test's time.
# Looking a file up when it is asked for serves the same answers (the servers the e2e tests
# start run the deployed settings, which read them once).
WHITENOISE_AUTOREFRESH = True
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Query counts assume a user checked earlier in the test is still remembered, however slow the
# machine; the tests of the cache's expiry set their own lifetime.
AUTH_USER_CACHE_SECONDS = 3600
# The suite adds feeds at made-up hosts: no test fetches one unless it turns checks on.
FEED_CHECKS_ENABLED = False
# The feed tests that turn checks on follow each one within the request that asked for it.
FEED_CHECK_THREADS = 0
# An import runs within the request that started it (Celery's eager mode), so that the test
# sees its end; tests/imports/test_page.py runs the home server's thread too.
IMPORT_IN_THREAD = False
# Mail is sent by the task right after the commit that queued it (Celery's eager mode), so that a
# test reads it from the SMTP server it started (tests/mail); tests/mail runs the thread too.
MAIL_IN_THREAD = False
