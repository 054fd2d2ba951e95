"""`make integration`: the adapters run inside the pinned vLLM and SGLang (harness.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("GEMMA4_INTEGRATION_CACHE", HERE.parent / ".cache" / "integration"))
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

harness.activate(CACHE)
