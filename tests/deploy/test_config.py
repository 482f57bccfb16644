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
