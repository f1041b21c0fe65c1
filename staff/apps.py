from django.apps import AppConfig


class StaffConfig(AppConfig):
    """The admin as the people who run the service see it (docs/operations.md, "The admin")."""

    name = "staff"
    verbose_name = "Staff"
