#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    from django.core.management import execute_from_command_line

    from home.environment import StartError

    try:
        execute_from_command_line(sys.argv)
    except StartError as exc:  # a start that cannot go on says what to do, in one line
        sys.exit(str(exc))


if __name__ == "__main__":
    main()
