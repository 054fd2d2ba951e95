"""One campaign under atheris: `python -m fuzz.atheris_target CAMPAIGN [libFuzzer options]`.

Atheris feeds bytes, hypothesis turns them into the campaign's inputs (`fuzz_one_input`), and the
coverage of the two packages guides which bytes come next. A failure ends the process with the
exception and the input libFuzzer saved (crash-*); rerun the same command with that file to replay.
"""

import sys

import atheris

with atheris.instrument_imports(include=["gemma4_lark", "gemma4_incremental"]):
    import gemma4_incremental  # noqa: F401
    import gemma4_lark  # noqa: F401

from . import runner  # noqa: E402
from .properties import campaign  # noqa: E402


def main() -> None:
    c = campaign(sys.argv[1])
    test = runner.test_function(c, examples=1)
    atheris.Setup([sys.argv[0]] + sys.argv[2:], test.hypothesis.fuzz_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
