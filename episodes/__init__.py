"""Episode actions of the gpodder.net API: what each app downloaded, played (and where it
stopped), deleted or marked new, uploaded by one app and read by the others (docs/gpodder-api.md,
"Episode actions")."""
