"""docs/public-instance.md's command to check that mail leaves, run as written against a real
SMTP server (its other blocks: tests/docs/test_self_hosting.py, with the other guide's)."""

import subprocess
from pathlib import Path

import pytest

from tests.docs.blocks import blocks
from tests.docs.session import person
from tests.mailserver import smtp_server
from tests.servers import ROOT

pytestmark = pytest.mark.e2e

PUBLIC = ROOT / "docs" / "public-instance.md"


def test_the_test_mail_command_sends_a_mail(tmp_path: Path) -> None:
    (block,) = [b for b in blocks(PUBLIC, "real-host") if "sendtestemail" in b.text]
    with smtp_server() as box:
        settings = {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "SECRET_KEY": "a-secret-key-for-the-guide-that-is-long-and-random-0123456789",
            "PUBLIC_URL": "https://sync.example.com",
            "EMAIL_URL": f"smtp://127.0.0.1:{box.port}",
        }
        ran = subprocess.run(
            ["bash", "-e", "-c", block.text],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**person(), "HOME": str(tmp_path), **settings},
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        (message,) = box.wait_for(1)
    assert message["To"] == "you@example.com"
    assert message["From"] == "Podcast sync <noreply@sync.example.com>"
