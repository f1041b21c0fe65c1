"""The gpodder API's fixtures (alice and bob with a password, a Basic app) serve here too."""

from tests.gpodder.conftest import _forget_credentials, alice, app, bob, plain_http_cookies

__all__ = ["_forget_credentials", "alice", "app", "bob", "plain_http_cookies"]
