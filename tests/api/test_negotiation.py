"""The API's content negotiation answers what DRF's would, only sooner."""

from typing import Any

import pytest
from django.http import Http404
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from api.negotiation import ContentNegotiation
from api.renderers import JSONRenderer

ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=4",
    "text/html",
    "text/html, */*;q=0.1",
    "application/*",
    "application/vnd.oai.openapi+json",
    "*/*;q=0.5",
]
RENDERERS = [[JSONRenderer()], [OpenApiJsonRenderer(), JSONRenderer()]]


def answer(negotiation: Any, request: Request, renderers: list[BaseRenderer]) -> Any:
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers)
    except (NotAcceptable, Http404) as exc:
        return type(exc)
    return type(renderer), media_type


@pytest.mark.parametrize("renderers", RENDERERS, ids=["json", "openapi"])
@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("query", ["", "?format=json", "?format=openapi-json"])
def test_the_same_answer_as_drf(accept, renderers, query):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get(f"/v1/subscriptions{query}", **headers))

    ours = answer(ContentNegotiation(), request, renderers)

    assert ours == answer(DefaultContentNegotiation(), request, renderers)
