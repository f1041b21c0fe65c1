"""GET and POST /v1/subscriptions.opml (docs/api.md)."""

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from deletions.models import Deletion
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from subscriptions.services import SubscriptionUpdate, subscription_update
from tests.helpers import assert_error, billion_laughs, subscribe

PATH = "/v1/subscriptions.opml"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "opml"
APPS = sorted(path.name for path in FIXTURES.glob("*.opml"))


def opml(*outlines: str, version: str = "2.0") -> bytes:
    body = "".join(outlines)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><opml version="{version}"><head><title>t</title>'
        f"</head><body>{body}</body></opml>"
    ).encode()


def feed(url: str, text: str = "A show") -> str:
    return f'<outline type="rss" text="{text}" xmlUrl="{url}"/>'


def post(api: APIClient, body: bytes, content_type: str = "text/x-opml") -> Any:
    return api.post(PATH, data=body, content_type=content_type)


def exported_urls(response: Any) -> list[str]:
    root = ET.fromstring(response.content)
    return [o.attrib["xmlUrl"] for o in root.iter("outline")]


def stored() -> list[Any]:
    return [
        list(model.objects.order_by("pk").values())
        for model in (Subscription, SubscriptionGuid, SubscriptionFeed, Deletion)
    ]


# --- Export -----------------------------------------------------------------------------------


def test_export_is_an_opml_2_attachment(api, user):
    subscribe(user, "https://podnews.net/rss")

    response = api.get(PATH)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/x-opml; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment;")
    assert 'filename="' in response["Content-Disposition"]
    assert response["Content-Disposition"].rstrip('"').endswith(".opml")
    assert response.content.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(response.content)
    assert root.tag == "opml"
    assert root.attrib["version"] == "2.0"
    assert root.find("head/title") is not None
    [outline] = root.iter("outline")
    assert outline.attrib == {
        "type": "rss",
        "text": "https://podnews.net/rss",  # no title is known: the URL stands in (docs/api.md)
        "xmlUrl": "https://podnews.net/rss",
    }


def test_export_answers_opml_whatever_the_client_accepts(api, user):
    for accept in ("text/x-opml", "application/xml", "application/json", "image/png"):
        response = api.get(PATH, HTTP_ACCEPT=accept)
        assert response.status_code == 200, accept
        assert response["Content-Type"] == "text/x-opml; charset=utf-8"


def test_export_holds_only_current_subscriptions_in_creation_order(api, user):
    kept = subscribe(user, "https://a.example/kept")
    dropped = subscribe(user, "https://a.example/unsubscribed")
    subscribe(user, "https://a.example/later")
    subscription_update(
        user=user, guid=dropped.guid, change=SubscriptionUpdate(is_subscribed=False)
    )
    Subscription.objects.filter(feed_url="https://a.example/later").update(
        deleted=kept.subscription_changed, is_subscribed=False
    )
    subscribe(user, "https://a.example/last")

    response = api.get(PATH)

    assert exported_urls(response) == ["https://a.example/kept", "https://a.example/last"]


def test_export_shows_the_current_feed_url_after_a_move(api, user):
    sub = subscribe(user, "https://old.example/feed")
    subscription_update(
        user=user, guid=sub.guid, change=SubscriptionUpdate(new_feed_url="https://new.example/f")
    )

    assert exported_urls(api.get(PATH)) == ["https://new.example/f"]


def test_export_never_holds_another_users_subscriptions(api, user, other_user):
    subscribe(user, "https://mine.example/feed")
    subscribe(other_user, "https://theirs.example/feed")

    response = api.get(PATH)

    assert b"theirs" not in response.content
    assert exported_urls(response) == ["https://mine.example/feed"]


def test_export_of_no_subscriptions_is_an_empty_body(api, user):
    root = ET.fromstring(api.get(PATH).content)
    assert root.find("body") is not None
    assert list(root.iter("outline")) == []


def test_export_escapes_urls_and_keeps_unicode(api, user):
    urls = [
        "https://example.org/feed.php?id=1&format=rss&q=%22x%22",
        "https://例え.jp/フィード.xml",
        "https://example.com/a'b\"c<d>",
    ]
    for url in urls:
        subscribe(user, url)

    response = api.get(PATH)

    assert b"&amp;format" in response.content
    assert exported_urls(response) == urls


def test_export_needs_a_token(anon):
    assert_error(anon.get(PATH), 401)


def test_export_query_count_does_not_grow_with_subscriptions(
    api, user, django_assert_max_num_queries
):
    for n in range(5):
        subscribe(user, f"https://a.example/{n}")
    with django_assert_max_num_queries(4) as few:  # with the activity, noted once an hour
        api.get(PATH)
    few_count = len(few)  # now: the next request resets the connection's query log
    post(api, opml(*(feed(f"https://b.example/{n}") for n in range(300))))

    with django_assert_max_num_queries(few_count):
        response = api.get(PATH)

    assert len(exported_urls(response)) == 305


# --- Import -----------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/x-opml", "application/xml", "text/xml"])
def test_import_answers_like_an_add(api, user, content_type):
    body = opml(feed("https://podnews.net/rss"), feed("example.com/rss"))

    response = post(api, body, f"{content_type}; charset=utf-8")

    assert response.status_code == 200, response.content
    answer = response.json()
    assert set(answer) == {"success", "failure"}
    [added] = answer["success"]
    assert added["feed_url"] == "https://podnews.net/rss"
    assert added["guid"] == "9b024349-ccf0-5f69-a609-6b82873eab3c"
    assert added["is_subscribed"] is True
    assert answer["failure"] == [{"feed_url": "example.com/rss", "message": "No protocol present"}]
    assert Subscription.objects.filter(user=user).count() == 1


def test_import_answers_exactly_what_the_json_add_answers(api, other_api, clock):
    urls = ["https://a.example/1", "ftp://a.example/2", "https://a.example/1", "http://"]
    json_answer = other_api.post(
        "/v1/subscriptions", {"subscriptions": [{"feed_url": u} for u in urls]}, format="json"
    ).json()

    opml_answer = post(api, opml(*(feed(u) for u in urls))).json()

    assert opml_answer == json_answer


def test_import_as_a_multipart_upload(api, user):
    upload = SimpleUploadedFile("podcasts.opml", opml(feed("https://a.example/f")), "text/x-opml")

    response = api.post(PATH, {"file": upload}, format="multipart")

    assert response.status_code == 200, response.content
    assert [s["feed_url"] for s in response.json()["success"]] == ["https://a.example/f"]


def test_multipart_without_a_file_field_is_refused(api, user):
    upload = SimpleUploadedFile("podcasts.opml", opml(feed("https://a.example/f")))

    response = api.post(PATH, {"document": upload}, format="multipart")

    assert_error(response, 405)
    assert "file" in response.json()["message"]
    assert not Subscription.objects.exists()


def test_nested_outlines_are_walked_and_categories_are_not_added(api, user):
    body = opml(
        '<outline text="News" title="News">',
        feed("https://a.example/1"),
        '<outline text="Deeper">',
        feed("https://a.example/2"),
        "</outline></outline>",
        '<outline text="A link" type="link" url="https://a.example/page"/>',
        feed("https://a.example/3"),
    )

    response = post(api, body)

    assert [s["feed_url"] for s in response.json()["success"]] == [
        "https://a.example/1",
        "https://a.example/2",
        "https://a.example/3",
    ]
    assert response.json()["failure"] == []


def test_duplicate_feeds_make_one_subscription_and_a_success_each(api, user):
    body = opml(
        feed("https://a.example/f"), feed("https://A.EXAMPLE/f/"), feed("https://a.example/f")
    )

    response = post(api, body)

    assert len(response.json()["success"]) == 3
    assert len({s["guid"] for s in response.json()["success"]}) == 1
    assert Subscription.objects.filter(user=user).count() == 1


def test_bad_urls_inside_the_opml_are_per_entry_failures(api, user):
    long_url = "https://a.example/" + "x" * 2100
    body = opml(
        feed(""),
        feed("mailto:someone@example.com"),
        feed("https://"),
        feed(long_url),
        feed("https://a.example/with space"),
        feed("https://a.example:99999/"),
        feed("https://a.example/good"),
    )

    response = post(api, body)

    assert response.status_code == 200
    assert [s["feed_url"] for s in response.json()["success"]] == ["https://a.example/good"]
    failures = response.json()["failure"]
    assert [f["feed_url"] for f in failures] == [
        "",
        "mailto:someone@example.com",
        "https://",
        long_url,
        "https://a.example/with space",
        "https://a.example:99999/",
    ]
    assert all(f["message"] for f in failures)


def test_unicode_titles_and_urls(api, user):
    body = opml(
        feed("https://例え.jp/フィード.xml", text="日本語のポッドキャスト"),
        feed("https://café.example/épisodes?q=ü", text="Café 😀"),
    )

    response = post(api, body)

    assert [s["feed_url"] for s in response.json()["success"]] == [
        "https://例え.jp/フィード.xml",
        "https://café.example/épisodes?q=ü",
    ]


def test_utf8_with_a_byte_order_mark(api, user):
    body = "\ufeff".encode() + opml(feed("https://a.example/ü", text="Ünïcödé"))

    response = post(api, body)

    assert response.status_code == 200, response.content
    assert [s["feed_url"] for s in response.json()["success"]] == ["https://a.example/ü"]


def test_iso_8859_1_declared_encoding(api, user):
    body = (
        '<?xml version="1.0" encoding="ISO-8859-1"?><opml version="1.1"><body>'
        '<outline text="Caf\u00e9" xmlUrl="https://a.example/caf\u00e9"/></body></opml>'
    ).encode("iso-8859-1")

    response = post(api, body)

    assert response.status_code == 200, response.content
    assert [s["feed_url"] for s in response.json()["success"]] == ["https://a.example/caf\u00e9"]


def test_utf16_with_a_byte_order_mark(api, user):
    body = opml(feed("https://a.example/f")).decode().replace("UTF-8", "UTF-16").encode("utf-16")

    response = post(api, body)

    assert [s["feed_url"] for s in response.json()["success"]] == ["https://a.example/f"]


def test_attribute_names_in_another_case_and_padded_urls(api, user):
    body = opml('<outline type="rss" text="x" xmlurl="  https://a.example/f\n "/>')

    response = post(api, body)

    assert [s["feed_url"] for s in response.json()["success"]] == ["https://a.example/f"]


def test_an_empty_body_element_adds_nothing(api, user):
    response = post(api, opml())

    assert response.status_code == 200
    assert response.json() == {"success": [], "failure": []}


BILLION_LAUGHS = billion_laughs(
    '<opml version="2.0"><body><outline text="&lol4;" xmlUrl="https://a.example/f"/></body></opml>',
    levels=4,
)

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE opml [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<opml version="2.0"><body><outline text="x" xmlUrl="https://a.example/&xxe;"/></body></opml>"""

EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE opml SYSTEM "http://127.0.0.1:1/evil.dtd">
<opml version="2.0"><body><outline text="x" xmlUrl="https://a.example/f"/></body></opml>"""

PARAMETER_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE opml [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>
<opml version="2.0"><body><outline xmlUrl="https://a.example/f"/></body></opml>"""

DTD_ONLY = b'<?xml version="1.0"?>\n<!DOCTYPE opml>\n<opml version="2.0"><body/></opml>'

REFUSED = {
    "malformed": b'<opml version="2.0"><body><outline xmlUrl="https://a.example/f"></body>',
    "not xml": b"https://a.example/feed.xml\nhttps://b.example/feed.xml",
    "json": b'{"subscriptions": [{"feed_url": "https://a.example/f"}]}',
    "empty": b"",
    "only a declaration": b'<?xml version="1.0"?>',
    "billion laughs": BILLION_LAUGHS,
    "external entity": EXTERNAL_ENTITY,
    "external DTD": EXTERNAL_DTD,
    "parameter entity": PARAMETER_ENTITY,
    "DTD only": DTD_ONLY,
    "RSS, not OPML": b'<rss version="2.0"><channel><title>x</title></channel></rss>',
    "namespaced root": b'<x:opml xmlns:x="urn:x"><body><outline xmlUrl="https://a.example/f"/>'
    b"</body></x:opml>",
    "no body": b'<opml version="2.0"><head><title>t</title></head></opml>',
    "outline outside body": b'<opml version="2.0"><head><outline xmlUrl="https://a.example/f"/>'
    b"</head></opml>",
    "two roots": opml(feed("https://a.example/f")) + b"<opml/>",
    "undeclared entity": opml(feed("https://a.example/&nbsp;")),
    "bad declared encoding": b'<?xml version="1.0" encoding="no-such-encoding"?><opml/>',
    "latin-1 bytes declared utf-8": b'<opml><body><outline xmlUrl="https://a.example/\xe9"/>'
    b"</body></opml>",
    "NUL byte": b'<opml><body><outline xmlUrl="https://a.example/\x00"/></body></opml>',
    "deep nesting": b"<opml><body>" + b"<outline>" * 50_000 + b"</outline>" * 50_000 + b"</body>",
}


@pytest.mark.parametrize("body", REFUSED.values(), ids=REFUSED.keys())
def test_what_is_not_opml_is_refused_and_changes_nothing(api, user, body):
    subscribe(user, "https://already.example/feed")
    before = stored()

    response = post(api, body)

    assert_error(response, 405)
    assert response.json()["message"].startswith("Input could not be validated: ")
    assert stored() == before


def test_a_dtd_is_refused_with_a_message_naming_it(api, user):
    response = post(api, EXTERNAL_ENTITY)

    assert_error(
        response, 405, "Input could not be validated: OPML must not contain a DTD or entities"
    )


def test_a_very_deep_but_wellformed_document_is_not_a_500(api, user):
    depth = 20_000
    body = opml(
        '<outline text="c">' * depth + feed("https://a.example/deep") + "</outline>" * depth
    )

    response = post(api, body)

    assert response.status_code == 200
    assert [s["feed_url"] for s in response.json()["success"]] == ["https://a.example/deep"]


def test_a_body_over_the_limit_is_a_413(api, user, settings):
    body = opml(*(feed(f"https://a.example/{n:07d}") for n in range(20_000)))
    assert len(body) > settings.MAX_BODY_BYTES

    response = post(api, body)

    assert_error(response, 413, "Request body too large: the limit is 1048576 bytes")
    assert not Subscription.objects.exists()


def test_a_multipart_upload_over_the_limit_is_a_413(api, user, settings):
    body = opml(*(feed(f"https://a.example/{n:07d}") for n in range(20_000)))

    response = api.post(PATH, {"file": SimpleUploadedFile("a.opml", body)}, format="multipart")

    assert_error(response, 413)
    assert not Subscription.objects.exists()


def test_more_feeds_than_the_opml_limit_is_a_405_naming_it(api, user, settings):
    settings.MAX_OPML_ENTRIES = 10

    response = post(api, opml(*(feed(f"https://a.example/{n}") for n in range(11))))

    assert_error(
        response, 405, "Input could not be validated: too many feeds, at most 10 per OPML document"
    )
    assert not Subscription.objects.exists()


def test_the_opml_limit_is_higher_than_an_adds(api, user, settings):
    assert settings.MAX_OPML_ENTRIES > settings.MAX_ADD_ENTRIES

    response = post(api, opml(*(feed(f"https://a.example/{n}") for n in range(600))))

    assert response.status_code == 200
    assert len(response.json()["success"]) == 600


@pytest.mark.parametrize(
    "content_type", ["application/json", "text/plain", "application/x-www-form-urlencoded"]
)
def test_other_content_types_are_a_415(api, user, content_type):
    response = post(api, opml(feed("https://a.example/f")), content_type)

    body = assert_error(response, 415)
    assert "text/x-opml" in body["message"]
    assert not Subscription.objects.exists()


def test_import_needs_a_token(anon, user):
    assert_error(post(anon, opml(feed("https://a.example/f"))), 401)
    assert not Subscription.objects.exists()


def test_other_methods_are_a_405_with_allow(api):
    for method in ("put", "patch", "delete"):
        response = getattr(api, method)(PATH)
        assert_error(response, 405)
        assert "GET" in response["Allow"]


def test_import_re_subscribes_and_follows_moves_like_an_add(api, user):
    sub = subscribe(user, "https://old.example/feed")
    subscription_update(
        user=user, guid=sub.guid, change=SubscriptionUpdate(new_feed_url="https://new.example/f")
    )
    subscription_update(user=user, guid=sub.guid, change=SubscriptionUpdate(is_subscribed=False))

    response = post(api, opml(feed("https://old.example/feed")))

    [added] = response.json()["success"]
    assert added["feed_url"] == "https://new.example/f"
    assert added["is_subscribed"] is True
    assert Subscription.objects.filter(user=user).count() == 1


def test_import_query_count_does_not_grow_with_outlines(api, user, django_assert_max_num_queries):
    with django_assert_max_num_queries(50) as one:
        post(api, opml(feed("https://a.example/first")))
    one_count = len(one)

    with django_assert_max_num_queries(one_count):
        response = post(
            api, opml(*(feed(f"https://b.example/{n}", text=f"Show {n}") for n in range(2000)))
        )

    assert len(response.json()["success"]) == 2000


# --- Real apps' exports -----------------------------------------------------------------------


@pytest.mark.parametrize("app", APPS)
def test_each_apps_export_imports_every_feed(api, user, app):
    document = (FIXTURES / app).read_bytes()
    expected = [
        o.attrib["xmlUrl"] for o in ET.fromstring(document).iter("outline") if "xmlUrl" in o.attrib
    ]

    response = post(api, document)

    assert response.status_code == 200, response.content[:500]
    assert response.json()["failure"] == []
    assert [s["feed_url"] for s in response.json()["success"]] == expected
    assert len(expected) == 50


def test_round_trip_of_300_feeds_from_six_apps(api, user, other_api, other_user):
    imported: list[dict[str, Any]] = []
    for app in APPS:
        response = post(api, (FIXTURES / app).read_bytes(), "application/xml")
        assert response.json()["failure"] == []
        imported += response.json()["success"]
    urls = [s["feed_url"] for s in imported]
    assert len(urls) == len(set(urls)) == 300

    exported = api.get(PATH)

    assert exported_urls(exported) == urls
    # The export, imported into another account, gives the same 300 feeds with the same guids.
    again = post(other_api, exported.content)
    assert [(s["feed_url"], s["guid"]) for s in again.json()["success"]] == [
        (s["feed_url"], s["guid"]) for s in imported
    ]
    assert Subscription.objects.filter(user=other_user).count() == 300
    assert Subscription.objects.filter(user=user).count() == 300
