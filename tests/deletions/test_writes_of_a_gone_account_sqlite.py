"""Writes of an account deleted or deactivated since its request was authenticated, on SQLite
(the embedded default, `make run`), in a process of its own on a fresh SQLite file: refused
(NotAuthorized) and nothing written; what a read notes left out."""

from pathlib import Path

from tests.sqlite import run_on_sqlite

SCRIPT = r"""
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from core.exceptions import NotAuthorized
from episodes.actions import actions_parsed
from episodes.models import EpisodeAction, ReceivedClock
from episodes.services import actions_upload
from gpodder.models import DeviceFeed
from gpodder.services import device_touch, subscription_pull, subscription_upload
from nextcloud.models import ActionsRead
from nextcloud.services import actions_download
from subscriptions.models import Subscription
from subscriptions.services import AddEntry, subscription_add_many

User = get_user_model()
FEED = "https://feeds.example/gone.xml"
ACTION = {"podcast": FEED, "episode": "https://e.example/1.mp3", "action": "download"}

def refused(write):
    try:
        write()
    except NotAuthorized:
        return
    raise AssertionError(f"{write} went through")

for gone in ("deactivated", "deleted"):
    user = User.objects.create(username=f"alice-{gone}")  # what the request authenticated
    subscription_add_many(user=user, entries=[AddEntry(FEED)])  # on /v1/: no spelling yet
    phone = device_touch(user=user, device_id="phone")
    if gone == "deactivated":
        User.objects.filter(pk=user.pk).update(is_active=False)
    else:
        User.objects.filter(pk=user.pk).delete()
    refused(lambda: subscription_add_many(user=user, entries=[AddEntry(FEED + "?2")]))
    refused(lambda: subscription_upload(user=user, device=phone, add=[FEED + "?3"], remove=[]))
    refused(lambda: device_touch(user=user, device_id="tablet"))
    actions = actions_parsed([{**ACTION, "device": "phone"}], limit=10)
    refused(lambda: actions_upload(user=user, actions=actions))
    assert not EpisodeAction.objects.filter(user_id=user.pk).exists()
    assert not ReceivedClock.objects.filter(user_id=user.pk).exists()
    assert Subscription.objects.filter(user_id=user.pk).count() == (gone == "deactivated")
    # Reads are answered while the device stands; what they note for themselves is left out.
    if gone == "deactivated":
        subscription_pull(user=user, device_id="phone", since=0)
        actions_download(user=user, device_id="phone", since=0)
    else:  # the device went with the account: making it again is refused
        refused(lambda: subscription_pull(user=user, device_id="phone", since=0))
        refused(lambda: actions_download(user=user, device_id="phone", since=0))
    assert not DeviceFeed.objects.exists()
    assert not ActionsRead.objects.exists()
print("ok")
"""


def test_writes_of_a_gone_account_on_sqlite(tmp_path: Path) -> None:
    run_on_sqlite(SCRIPT, tmp_path)
