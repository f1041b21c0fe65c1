"""Property-based tests generated from our own OpenAPI document (schemathesis).

Every operation is called with generated valid and invalid input, through the whole WSGI stack
on the real database, and checked against the document with every check schemathesis has: no
500, only documented status codes, content types, bodies and headers matching their schemas,
schema-valid input accepted (or 401/404 for credentials and guids that do not exist),
schema-invalid input refused, authentication enforced, unsupported methods refused.
"""

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, settings
from rest_framework_simplejwt.tokens import AccessToken
from schemathesis.core.transforms import to_wire_text

from accounts.active import password_mark
from accounts.authentication import PASSWORD_CLAIM
from config.wsgi import application
from tests.factories import UserFactory

schema = schemathesis.openapi.from_wsgi("/v1/openapi.json", application)
# Each test's user gets this id, so one token, made before any case is, stays valid.
USER_ID = 424242
PASSWORD = "!not-a-password"  # the hash the token is bound to


# Through schemathesis' auth, not a header set on every call: a case that leaves the token out on
# purpose (negative testing) must go out without one.
@schema.auth()
class BearerAuth:
    def get(self, case, context):
        token = AccessToken.for_user(get_user_model()(id=USER_ID))
        token[PASSWORD_CLAIM] = password_mark(PASSWORD)  # as every token the service issues
        return str(token)

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


# The OPML import takes the document itself as the body. Schemathesis would wrap a string in an
# XML element of its own (it reads an XML body's schema as the element's content).
@schemathesis.serializer("text/x-opml", "application/xml", "text/xml")
def raw_document(ctx, value):
    return value if isinstance(value, bytes) else to_wire_text(value).encode()


@pytest.fixture
def token_user(db):
    user = UserFactory(id=USER_ID)
    get_user_model().objects.filter(id=USER_ID).update(password=PASSWORD)
    return user


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.django_db(transaction=True)
def test_every_operation_honours_the_document(case, token_user):
    case.call_and_validate()  # all checks, none excluded
