"""The gpodder.net API v2 over the same subscriptions: HTTP Basic with a session cookie, devices,
and the advanced and simple subscription APIs that AntennaPod, gPodder and Kasts speak
(docs/gpodder-api.md)."""
