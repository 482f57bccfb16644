"""Code the tests share (fixtures live in the conftest.py files): paths, AppTest, Chromium, servers, oracles."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
