"""The OPML management commands staff run (docs/operations.md, "Staff"): import_opml adds
through the service, whatever the API's limits, and export_opml writes what import_opml reads
back."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from subscriptions.models import Subscription
from tests.helpers import subscribe

OPML_FIXTURES = Path(__file__).parent.parent / "fixtures" / "opml"


def test_import_opml_command_adds_through_the_service_with_a_progress_bar(alice, tmp_path):
    out, err = StringIO(), StringIO()

    call_command(
        "import_opml", "alice", str(OPML_FIXTURES / "overcast.opml"), stdout=out, stderr=err
    )

    assert "Added 50 feed(s) to alice; 0 failed." in out.getvalue()
    assert "Importing: 100%" in err.getvalue()
    assert Subscription.objects.filter(user=alice, is_subscribed=True).count() == 50


def test_import_opml_command_takes_files_over_the_api_limits(alice, tmp_path, settings):
    settings.MAX_ADD_ENTRIES = 7  # batches of 7
    outlines = "".join(
        f'<outline type="rss" text="{n}" xmlUrl="https://big.example/{n}"/>' for n in range(30)
    )
    path = tmp_path / "big.opml"
    path.write_text(f'<opml version="2.0"><body>{outlines}<outline xmlUrl="nope"/></body></opml>')
    out, err = StringIO(), StringIO()

    call_command("import_opml", "alice", str(path), "--no-progress", stdout=out, stderr=err)

    assert "Added 30 feed(s) to alice; 1 failed." in out.getvalue()
    assert "Not added: nope: No protocol present" in err.getvalue()
    assert Subscription.objects.filter(user=alice).count() == 30


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"<opml><body>", "not well-formed"),
        (b'<!DOCTYPE x [<!ENTITY a "b">]><opml><body/></opml>', "DTD"),
        (b"<rss/>", "not an OPML document"),
    ],
)
def test_import_opml_command_refuses_what_is_not_opml(alice, tmp_path, content, message):
    path = tmp_path / "bad.opml"
    path.write_bytes(content)

    with pytest.raises(CommandError, match=message):
        call_command("import_opml", "alice", str(path), stdout=StringIO(), stderr=StringIO())
    assert not Subscription.objects.exists()


def test_opml_commands_refuse_unknown_users_and_files(alice, tmp_path):
    with pytest.raises(CommandError, match="No user named"):
        call_command("export_opml", "nobody", stdout=StringIO())
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_opml", "alice", str(tmp_path / "missing.opml"), stdout=StringIO())


def test_export_opml_command_round_trips_with_import(alice, bob, alpha, beta, tmp_path):
    subscribe(alice, "https://alpha.example/b?x=1&y=2")
    path = tmp_path / "alice.opml"
    err = StringIO()

    call_command("export_opml", "alice", "-o", str(path), stderr=err)
    call_command("import_opml", "bob", str(path), "--no-progress", stdout=StringIO())

    assert "Wrote 2 feed(s)" in err.getvalue()
    assert "Exporting: 100%" in err.getvalue()
    assert b"beta.example" not in path.read_bytes()
    assert set(Subscription.objects.filter(user=bob).values_list("feed_url", flat=True)) == {
        "https://alpha.example/feed.xml",
        "https://alpha.example/b?x=1&y=2",
        beta.feed_url,
    }


def test_export_opml_command_to_stdout(alice, alpha):
    out = StringIO()

    call_command("export_opml", "alice", "--no-progress", stdout=out)

    assert out.getvalue().startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert 'xmlUrl="https://alpha.example/feed.xml"' in out.getvalue()


def test_export_opml_command_counts_what_it_wrote_without_a_progress_bar(alice, alpha, tmp_path):
    err = StringIO()

    call_command(
        "export_opml", "alice", "-o", str(tmp_path / "a.opml"), "--no-progress", stderr=err
    )

    assert "Wrote 1 feed(s)" in err.getvalue()
    assert "Exporting" not in err.getvalue()
