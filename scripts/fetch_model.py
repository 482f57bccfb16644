"""Download a checkpoint from the Hugging Face Hub into the models folder the app lists (the same command as
``python -m attention.model.fetch``; see docs/fetching.md):

    python scripts/fetch_model.py HuggingFaceTB/SmolLM2-135M      # -> models/HuggingFaceTB--SmolLM2-135M
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention.model.fetch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
