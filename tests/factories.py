"""factory_boy factories for the tests."""

from typing import Any

import factory
from django.contrib.auth import get_user_model

from tests.hashers import deployed_hash


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    # Hashing with Argon2 is slow on purpose: only tests that log in set a password.
    password = factory.PostGenerationMethodCall("set_unusable_password")

    @factory.post_generation
    def with_password(user: Any, create: bool, extracted: str | None, **kwargs: object) -> None:
        if extracted:
            user.set_password(extracted)
        if create:
            user.save()

    @factory.post_generation
    def with_deployed_password(
        user: Any, create: bool, extracted: str | None, **kwargs: object
    ) -> None:
        """For a server the test starts under the deployed settings (tests/hashers.py)."""
        if extracted:
            user.password = deployed_hash(extracted)
            if create:
                user.save()
