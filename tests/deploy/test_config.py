"""The server is ready for a classroom: no e-mail prompt, no error details, XSRF on, upload limit = the parser's."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from attention.io import parse
from tests.helpers import ROOT

CONFIG = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))


def test_the_upload_limit_is_the_parsers() -> None:
    assert CONFIG["server"]["maxUploadSize"] == parse.MAX_UPLOAD_MB


def test_hosting_settings() -> None:
    assert CONFIG["server"]["headless"] is True  # no "Email:" prompt, no browser launch
    assert CONFIG["client"]["showErrorDetails"] == "none"
    assert CONFIG["server"]["enableXsrfProtection"] is True
    assert CONFIG["browser"]["gatherUsageStats"] is False


def test_streamlit_reads_these_settings() -> None:
    """Streamlit itself, started in this folder, reports the values (so a typo in an option name would show)."""
    code = (
        "from streamlit import config; config.get_config_options(force_reparse=True); "
        "print(config.get_option('server.headless'), config.get_option('client.showErrorDetails'), "
        "config.get_option('server.enableXsrfProtection'), config.get_option('server.maxUploadSize'), "
        "config.get_option('runner.postScriptGC'), config.get_option('theme.primaryColor'))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "none", "True", "16", "False", CONFIG["theme"]["primaryColor"]]


def test_the_accent_is_not_a_red_that_reads_as_an_error() -> None:
    """A grid cell keeps a border in the accent colour after Enter; learners read Streamlit's red as an error."""
    colour = CONFIG["theme"]["primaryColor"].lstrip("#")
    r, g, b = (int(colour[i : i + 2], 16) for i in (0, 2, 4))
    assert b > r and b > g  # blue


def test_the_secrets_file_is_ignored_by_git() -> None:
    """.streamlit/secrets.toml holds the teacher key and the board database's password: git must never take it."""
    ignored = subprocess.run(["git", "check-ignore", "-q", ".streamlit/secrets.toml"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, ".streamlit/secrets.toml is not ignored by git"


def test_the_teaching_docs_say_how_to_set_up_a_class() -> None:
    """When to open the class and give out the code, that setting paths are relative to the working folder, and the
    PostgreSQL role and database step by step (initdb refusing root included)."""
    teaching = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    deploying = (ROOT / "docs" / "deploying.md").read_text(encoding="utf-8")
    assert "**When to open the class**" in teaching and "Hand out the join link (or the code)" in teaching
    assert "relative to the working folder" in deploying and "four slashes" in deploying
    assert "`initdb` refuses to run as root" in deploying
    for step in (
        "CREATE ROLE attention LOGIN PASSWORD",
        "createdb -p 5433 -O attention attention_board",  # on the cluster's own port
        "postgresql+psycopg://",
    ):
        assert step in deploying, step
