"""A web process made ready before its first request.

Django loads the URLconf, and with it every view module, DRF and the cache's and the broker's
clients, on the first request that needs each. With gunicorn's preload that happened once in
every worker, inside the first requests it served, and in its own memory. Loaded where the app
is made instead (the master under preload, the home server's single worker as it boots), it is
done once, shared by every worker forked after it, and no app's request waits for it."""


def up() -> None:
    from celery import current_app
    from django.core.cache import caches
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
    for alias in caches:
        # A Redis cache's client (redis-py) is made on first use; a local one has nothing more.
        getattr(caches[alias], "_cache", None)
    # The broker's transport module; a connection is opened only when a task is sent.
    current_app.connection_for_write().release()
