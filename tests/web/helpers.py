"""The password of `person` and `stranger` (tests/conftest.py), for the tests that sign in on
the pages."""

PASSWORD = "a long and unusual passphrase 7"
