"""The HTTP plumbing every API of the service shares: the error object and the one exception
handler, parsers, renderers, negotiation, pagination, query parameters, throttles, schema helpers,
and the endpoints that belong to no app (the index, capabilities, health)."""
