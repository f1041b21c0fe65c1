"""The flush the transactional tests run after each test (tests/testdb): every table emptied
but the content types and permissions that migrations wrote."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command

from deletions.models import Deletion
from subscriptions.models import Subscription, SubscriptionGuid
from tests.factories import UserFactory
from tests.helpers import subscribe


# As TransactionTestCase runs it after each test (False), and as `manage.py flush` would (True).
@pytest.mark.parametrize("reset_sequences", [False, True])
@pytest.mark.django_db(transaction=True)
def test_the_flush_empties_every_table_but_the_content_types_and_permissions(
    reset_sequences: bool,
) -> None:
    # With their ids: kept, not written again.
    content_types = sorted(ContentType.objects.values_list("pk", "app_label", "model"))
    permissions = sorted(Permission.objects.values_list("pk", "codename"))
    assert content_types
    assert permissions
    user: Any = UserFactory()
    sub = subscribe(user, "https://example.com/feed.xml")
    Deletion.objects.create(user=user, subscription=sub, guid=sub.guid, requested=sub.changed)

    call_command("flush", interactive=False, verbosity=0, reset_sequences=reset_sequences)

    assert sorted(ContentType.objects.values_list("pk", "app_label", "model")) == content_types
    assert sorted(Permission.objects.values_list("pk", "codename")) == permissions
    assert get_user_model().objects.count() == 0
    assert Subscription.objects.count() == SubscriptionGuid.objects.count() == 0
    assert Deletion.objects.count() == 0
