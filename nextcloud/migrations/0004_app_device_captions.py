"""Devices made for an app password before they were given its name as their caption (docs/
nextcloud.md, "Devices"): the ones whose id had to change the name get it now, unless the person
named them since."""

from django.db import migrations

from nextcloud.services import device_caption_for, device_id_for


def caption_app_devices(apps, schema_editor):  # type: ignore[no-untyped-def]
    AppPassword = apps.get_model("accounts", "AppPassword")
    Device = apps.get_model("gpodder", "Device")
    for user_id, name in AppPassword.objects.values_list("user_id", "name").iterator(2000):
        caption = device_caption_for(name)
        if caption:
            Device.objects.filter(
                user_id=user_id, device_id=device_id_for(name), caption=""
            ).update(caption=caption)


class Migration(migrations.Migration):
    dependencies = [
        ("nextcloud", "0003_loginflow_started_from"),
        ("accounts", "0003_username_case_unique"),
        ("gpodder", "0003_device_sync_events"),
    ]

    operations = [migrations.RunPython(caption_app_devices, migrations.RunPython.noop)]
