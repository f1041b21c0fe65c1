"""The Nextcloud "gPodder Sync" API over the same subscriptions, devices and episode actions:
the four data paths under /index.php/apps/gpoddersync/ that AntennaPod's Nextcloud option and
Kasts speak, and the Login Flow v2 that AntennaPod logs in with (docs/nextcloud.md)."""
