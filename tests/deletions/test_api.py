"""GET /v1/deletions/{id}: the status of a deletion (docs/api.md:
"GET /v1/deletions/{id}", "Deletion")."""

import uuid
from typing import Any

import pytest
from django.utils import timezone

from deletions.models import Deletion
from tests.helpers import assert_error

ROLLED_BACK = "The deletion process encountered an error and was rolled back"


def make_deletion(user: Any, status: str = "PENDING", message: str = "", **fields: Any) -> Deletion:
    return Deletion.objects.create(
        user=user,
        guid=uuid.uuid4(),
        status=status,
        message=message,
        requested=timezone.now(),
        **fields,
    )


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ("SUCCESS", "Subscription deleted successfully"),
        ("FAILURE", ROLLED_BACK),
        ("FAILURE", "The subscription was changed after the deletion was requested"),
        ("PENDING", "Deletion is pending"),
    ],
)
def test_deletion_answers_its_status_and_message(api, user, status, message):
    deletion = make_deletion(user, status, message)

    response = api.get(f"/v1/deletions/{deletion.pk}")

    assert response.status_code == 200, response.content
    assert response.json() == {"deletion_id": deletion.pk, "status": status, "message": message}


@pytest.mark.parametrize(
    ("status", "word"), [("PENDING", "pending"), ("SUCCESS", "success"), ("FAILURE", "error")]
)
def test_deletion_without_a_stored_message_still_describes_its_outcome(api, user, status, word):
    deletion = make_deletion(user, status)

    body = api.get(f"/v1/deletions/{deletion.pk}").json()

    assert body["status"] == status
    assert isinstance(body["message"], str)
    assert word in body["message"].lower()


def test_deletion_id_is_a_json_integer(api, user):
    deletion = make_deletion(user)

    body = api.get(f"/v1/deletions/{deletion.pk}").json()

    assert type(body["deletion_id"]) is int


def test_deletion_of_a_subscription_that_is_gone_is_still_readable(api, user):
    deletion = make_deletion(user, "SUCCESS", subscription=None)

    response = api.get(f"/v1/deletions/{deletion.pk}")

    assert response.status_code == 200
    assert response.json()["status"] == "SUCCESS"


@pytest.mark.parametrize("spelling", ["25", "25.0", "25.00", "025", "00000000000000000000025"])
def test_integral_id_with_a_zero_fraction_is_that_integer(api, user, spelling):
    make_deletion(user, "SUCCESS", "Subscription deleted successfully", pk=25)

    response = api.get(f"/v1/deletions/{spelling}")

    assert response.status_code == 200, response.content
    assert response.json()["deletion_id"] == 25


@pytest.mark.parametrize(
    "spelling",
    [
        "1.5",
        "25.5",
        "25.01",
        "0",
        "0.0",
        "-1",
        "-25",
        "abc",
        "25abc",
        "0x19",
        "%00",
        "1%0A",  # a trailing newline
        "1.",
        "NaN",
        "Infinity",
        "true",
        "null",
        "%D9%A1",  # ARABIC-INDIC DIGIT ONE: a digit to a regex, not to JSON
        str(2**63),
        str(2**64),
        "9" * 5000,
    ],
)
def test_id_that_is_not_a_positive_63_bit_integer_is_405(api, user, spelling):
    make_deletion(user, pk=1)

    response = api.get(f"/v1/deletions/{spelling}")

    body = assert_error(response, 405)
    assert body["message"] in (
        "Input could not be validated: id must be a positive integer",
        f"Input could not be validated: id must be at most {2**63 - 1}",
    )
    assert set(body["errors"]) == {"id"}


def test_largest_63_bit_id_is_valid_and_not_found(api):
    response = api.get(f"/v1/deletions/{2**63 - 1}")

    assert_error(response, 404, "Resource not found")


def test_missing_deletion_is_404(api, user):
    deletion = make_deletion(user)

    response = api.get(f"/v1/deletions/{deletion.pk + 1000}")

    assert_error(response, 404, "Resource not found")


def test_another_users_deletion_is_404_exactly_like_a_missing_one(api, other_user):
    theirs = make_deletion(other_user, "SUCCESS")
    missing = api.get(f"/v1/deletions/{theirs.pk + 1000}")

    response = api.get(f"/v1/deletions/{theirs.pk}")

    assert_error(response, 404, "Resource not found")
    assert response.content == missing.content
    assert dict(response.items()).keys() == dict(missing.items()).keys()


def test_owner_reads_what_the_other_user_cannot(api, other_api, user):
    mine = make_deletion(user, "SUCCESS")

    assert api.get(f"/v1/deletions/{mine.pk}").status_code == 200
    assert other_api.get(f"/v1/deletions/{mine.pk}").status_code == 404


def test_deletion_needs_a_token(anon, user):
    deletion = make_deletion(user)

    response = anon.get(f"/v1/deletions/{deletion.pk}")

    assert_error(response, 401, "User not authorized")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_reading_a_deletion_changes_nothing(api, user):
    deletion = make_deletion(user, "PENDING")
    before = Deletion.objects.values().get(pk=deletion.pk)

    api.get(f"/v1/deletions/{deletion.pk}")

    assert Deletion.objects.values().get(pk=deletion.pk) == before


def test_query_count_is_small_and_fixed(api, user, django_assert_max_num_queries):
    deletions = [make_deletion(user, "SUCCESS") for _ in range(20)]
    make_deletion(user, "FAILURE")

    # The user behind the token, the deletion, and the account's activity (noted once an hour).
    with django_assert_max_num_queries(3):
        response = api.get(f"/v1/deletions/{deletions[-1].pk}")

    assert response.status_code == 200


def test_query_count_of_a_miss_is_small_too(api, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):
        response = api.get("/v1/deletions/123456789")

    assert response.status_code == 404


def test_query_count_of_a_bad_id_is_small_too(api, django_assert_max_num_queries):
    with django_assert_max_num_queries(1):
        response = api.get("/v1/deletions/abc")

    assert response.status_code == 405
