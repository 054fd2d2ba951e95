"""The one switch for every accelerator (docs/architecture.md#second-implementations)."""

import os

ENABLED = os.environ.get("GEMMA4_LARK_ACCELERATORS", "1") != "0"
