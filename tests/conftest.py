"""Shared test setup: make the repo root importable (``import attention``) without installing it, and list no
models folder (the developer's own fetched models would change what the model chooser offers)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# a folder that does not exist: the app lists nothing from it, here and in the servers the tests start
os.environ["ATTENTION_MODELS_DIR"] = str(ROOT / "tests" / "no-models-folder")
