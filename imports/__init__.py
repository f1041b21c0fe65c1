"""Bringing a person's history from elsewhere (docs/imports.md): the subscriptions, devices and
episode actions of a file (an OPML file, a gpodder.net episode-actions answer, this service's
own export), written through the same services as the apps' uploads."""
