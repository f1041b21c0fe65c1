"""FastPathMiddleware: the hot requests' common case, answered by the views' own functions.

A request is taken only when all of this holds, and passed on to the view otherwise:

- FAST_PATH is on, and the URLconf resolves the path to a view and method (or viewset action)
  of ROUTES;
- no browser sent it (api.browsers: the view refuses what another site makes a browser send);
- its caller is known to this process without a password check or a session write: on the
  gpodder API, the app session its cookie names, remembered and standing (accounts.sessions),
  with Basic credentials verified here before that are that session's own (accounts.basic), or
  none; on the Nextcloud paths, Basic credentials verified here before; on /v1/, a bearer
  token verified here before, not an app password's, of an account found active a moment ago
  (accounts.authentication), asking for JSON as apps do (api.negotiation);
- the path names that caller, and the view's throttles let it through;
- the handler, the view's own answer, neither refuses it nor meets an error: any refusal
  (bad input, a conflict, the database away) is the view's to answer, as it always does.

It comes after the middleware that guards every request (hosts, proxies, HTTPS, body limits,
Cache-Control), so their rules stay theirs; what the skipped middleware and DRF would add to an
answer (the session's Vary, Allow, Content-Length, X-Frame-Options, the CSP) is added by theirs.
"""

from collections import Counter
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.core.exceptions import SuspiciousOperation
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase, UnreadablePostError
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.urls import Resolver404, resolve
from django.utils.cache import patch_vary_headers
from rest_framework.exceptions import APIException
from rest_framework.views import APIView

from accounts.authentication import BearerAuthentication, known_bearer_user
from accounts.basic import (
    BasicOnlyAuthentication,
    BasicThenSessionAuthentication,
    app_session_of,
    known_basic_user,
)
from accounts.sessions import (
    APP_PASSWORD_SESSION_KEY,
    app_session_standing,
    remembered_app_session,
    remembered_session_user,
    session_user_id,
)
from api.browsers import from_browser
from api.middleware import BodyNotReceivedMiddleware, CSPMiddleware, SkippedForApi
from api.negotiation import asks_plainly
from api.parsers import has_body
from api.protocols import names_user
from api.renderers import JSONRenderer
from api.throttles import throttles_pass
from core.exceptions import DomainError
from episodes import views as episodes
from gpodder import views as gpodder
from nextcloud import views as nextcloud
from subscriptions import views as subscriptions

Handler = Callable[..., HttpResponseBase | None]
Takes = Callable[[HttpRequest], bool]


def _always(request: HttpRequest) -> bool:
    return True


def _asks_json(request: HttpRequest) -> bool:
    return asks_plainly(request, JSONRenderer.media_type)


# The view and the handler of each hot request (the method's, or a viewset's action), which of
# them the fast path takes, told before anything is read (what it passes on costs the view
# nothing more), and its handler: (request, session key, the path's parameters but the
# username) to its answer.
ROUTES: dict[tuple[type[APIView], str], tuple[Takes, Handler]] = {
    (gpodder.SubscriptionsView, "get"): (_always, gpodder.fast_pull),
    (gpodder.SubscriptionsView, "post"): (has_body, gpodder.fast_upload),
    (episodes.EpisodeActionsView, "get"): (episodes.fast_takes_download, episodes.fast_download),
    (episodes.EpisodeActionsView, "post"): (has_body, episodes.fast_upload),
    (nextcloud.SubscriptionsView, "get"): (_always, nextcloud.fast_pull),
    (nextcloud.SubscriptionChangeView, "post"): (has_body, nextcloud.fast_change),
    (nextcloud.EpisodeActionsView, "get"): (_always, nextcloud.fast_download),
    (nextcloud.EpisodeActionCreateView, "post"): (has_body, nextcloud.fast_create),
    (subscriptions.SubscriptionViewSet, "list"): (_asks_json, subscriptions.fast_list),
    (subscriptions.SubscriptionViewSet, "retrieve"): (_asks_json, subscriptions.fast_read),
}


def _route(view: type[APIView], handler: str) -> tuple[Takes, Handler] | None:
    """The route of a view or of a view built on one (the /v1/ viewset config/urls.py joins)."""
    for base in view.__mro__:
        found = ROUTES.get((base, handler))
        if found is not None:
            return found
    return None


# What made a handler pass a request on: each is the view's to answer.
_PASSED_ON = (DomainError, APIException, DatabaseError, OSError, SuspiciousOperation)

# The requests this process answered here, by view and method: what the tests read to know the
# fast path answered, not the view (two threads adding at once may lose one).
answered: Counter[tuple[str, str]] = Counter()


class FastPathMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response
        # The response hooks of the middleware a fast answer skips: what they add to a view's
        # answer (each adds its own headers; their order makes no difference to them).
        self._finishing: list[Any] = [
            middleware(get_response)
            for middleware in (XFrameOptionsMiddleware, CSPMiddleware, CommonMiddleware)
        ]
        self._allowed: dict[Any, str] = {}  # by the URLconf's view function
        refusals = BodyNotReceivedMiddleware(get_response)  # type: ignore[arg-type]
        self._body_not_received = refusals.process_exception

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        # The API's paths (ROUTES' among them): a cheap test before the URLconf's, which the
        # pages never pay.
        if settings.FAST_PATH and request.path_info.startswith(settings.API_PATH_PREFIXES):
            response = self._answer(request)
            if response is not None:
                return response
        return self.get_response(request)

    def _answer(self, request: HttpRequest) -> HttpResponseBase | None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return None
        # A view's class (APIView.as_view's) or a viewset's and its actions (DRF's).
        view: type[APIView] | None = getattr(
            match.func, "cls", getattr(match.func, "view_class", None)
        )
        method = (request.method or "").lower()
        actions: dict[str, str] | None = getattr(match.func, "actions", None)
        handler = method if actions is None else actions.get(method, "")
        route = None if view is None else _route(view, handler)
        if view is None or route is None or not _takes(route[0], request):
            return None
        by_session = view.authentication_classes == [BasicThenSessionAuthentication]
        try:
            response = self._answered(request, view, route[1], match.kwargs, by_session)
        except UnreadablePostError as exc:
            # The body is spent: the view could not read it again. Answered as it would be.
            return self._body_not_received(request, exc)
        except _PASSED_ON:
            return None
        if response is None:
            return None
        return self._finished(request, response, match.func, view, by_session)

    def _answered(
        self,
        request: HttpRequest,
        view: type[APIView],
        handler: Handler,
        kwargs: dict[str, Any],
        by_session: bool,
    ) -> HttpResponseBase | None:
        if by_session:
            session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
            caller = _app_caller(request, session_key)
        elif view.authentication_classes == [BasicOnlyAuthentication]:
            session_key, caller = None, _basic_caller(request)
        elif view.authentication_classes == [BearerAuthentication]:
            user = known_bearer_user(request)
            session_key, caller = None, None if user is None else (user, None)
        else:
            return None
        if caller is None or not names_user(kwargs, caller[0]):
            return None
        request.user, request.app_password_id = caller  # type: ignore[attr-defined]
        if not throttles_pass(request, list(view.throttle_classes)):
            return None
        parameters = {k: v for k, v in kwargs.items() if k != "username"}
        return handler(request, session_key, **parameters)

    def _finished(
        self,
        request: HttpRequest,
        response: HttpResponseBase,
        func: Any,
        view: type[APIView],
        by_session: bool,
    ) -> HttpResponseBase:
        # DRF's Allow, and the Vary SessionMiddleware adds once a request read its session.
        if func not in self._allowed:
            self._allowed[func] = ", ".join(_allowed_methods(func, view, request))
        response["Allow"] = self._allowed[func]
        if by_session:
            patch_vary_headers(response, ("Cookie",))
        for finishing in self._finishing:
            if not (isinstance(finishing, SkippedForApi) and finishing.skips(request)):
                response = finishing.process_response(request, response)
        answered[(view.__name__, request.method or "")] += 1
        return response


def _takes(takes: Takes, request: HttpRequest) -> bool:
    """Whether the route takes the request: a query too long to read is the view's to refuse."""
    try:
        return takes(request) and not from_browser(request)
    except SuspiciousOperation:
        return False


def _allowed_methods(func: Any, view: type[APIView], request: HttpRequest) -> list[str]:
    """The methods DRF's Allow names for the view function `func`: its view set up as
    as_view's function sets it up (a viewset's actions bound to their methods, HEAD beside
    GET)."""
    instance = view(**getattr(func, "initkwargs", {}))
    for method, action in getattr(func, "actions", {}).items():
        setattr(instance, method, getattr(instance, action))
    instance.setup(request)
    return instance.allowed_methods


def _app_caller(request: HttpRequest, session_key: str | None) -> tuple[Any, int | None] | None:
    """The user and app password id of a gpodder API request, as BasicThenSessionAuthentication
    finds them, when that needs no password check and no session written: its app session,
    remembered and standing, and Basic credentials, if it sends them, verified here already and
    that very session's. None: the view's to find."""
    if session_key is None:
        return None  # Basic alone makes a session: the view's
    remembered = remembered_app_session(session_key)
    if remembered is None or not app_session_standing(remembered[0], request.path_info):
        return None
    data, state = remembered
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:6].lower() == "basic ":
        read = None if state is None else (session_user_id(data.get(SESSION_KEY)), state)
        known = known_basic_user(request, header[6:], read)
        return known if known is not None and app_session_of(data, *known) else None
    user = remembered_session_user(data, state)
    return None if user is None else (user, data.get(APP_PASSWORD_SESSION_KEY))


def _basic_caller(request: HttpRequest) -> tuple[Any, int | None] | None:
    """The user and app password id of a Nextcloud request, as BasicOnlyAuthentication finds
    them, when its Basic credentials were verified here already. None: the view's to check."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:6].lower() != "basic ":
        return None
    return known_basic_user(request, header[6:], None)
