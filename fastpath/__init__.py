"""The apps' hot sync requests answered without Django's view stack (docs/fast-path.md).

An app syncs every few minutes with the same few requests; most of their cost was Django's
middleware, DRF and the session machinery around a handful of statements. The fast path answers
their common case by calling the very functions the views call, and passes everything else on to
the view, which answers as it always did. It holds no protocol rule of its own.
"""
