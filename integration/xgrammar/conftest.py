"""The xgrammar run (`make integration-xgrammar`): its own venv, with xgrammar and a CPU torch;
the test venv never has them. The schema strategies are shared with tests/."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests"))
