"""People: token authentication, login, refresh and logout, the staff bootstrap, and the user
admin."""
