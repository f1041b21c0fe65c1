"""The test database's own management commands (config/settings/test.py installs this app)."""
