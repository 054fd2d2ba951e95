"""`gemma4-lark parse --format events` streams: memory does not grow with the input."""

import io
import sys
import tracemalloc

from gemma4_lark.cli import main

UNIT = 'Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>\n'


class _Sink(io.TextIOBase):
    """A standard output that keeps nothing, so only the command's own memory is measured."""

    def write(self, text):
        return len(text)


def _peak(path, *options) -> int:
    stdout, sys.stdout = sys.stdout, _Sink()
    tracemalloc.start()
    try:
        assert main(["parse", str(path), *options]) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        sys.stdout = stdout


def test_events_memory_does_not_grow_with_the_input(tmp_path):
    # n and 4n calls, both many read buffers long: a command that keeps its events holds 4x as much
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_text(UNIT * 3_000)
    large.write_text(UNIT * 12_000)
    _peak(small)  # imports and caches, outside the comparison
    assert _peak(large) < 1.5 * _peak(small)
