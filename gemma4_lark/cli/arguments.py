"""What the commands share in their arguments: number types, --max-depth, the version, and the
message that names the extra an optional dependency comes with."""

from __future__ import annotations

import argparse
import re
from contextlib import contextmanager
from importlib import metadata

from .. import parser as strict
from .inputs import CommandError

DISTRIBUTION = "gemma4-lark"


# --- optional dependencies ----------------------------------------------------------------------
# The distribution that provides each optional top-level module, to find the extra naming it.
_OPTIONAL_MODULES = {"hypothesis": "hypothesis", "railroad": "railroad-diagrams"}


def missing_extra(err: ModuleNotFoundError, command: str) -> CommandError:
    """The message for an optional dependency that is not installed: which extra brings it (read from
    this distribution's metadata, so it follows pyproject.toml)."""
    module = (err.name or "").split(".")[0]
    dist = _OPTIONAL_MODULES.get(module, module)
    extras = []
    try:
        for requirement in metadata.requires(DISTRIBUTION) or []:
            head, _, marker = requirement.partition(";")
            if re.match(re.escape(dist) + r"(?![\w.-])", head.strip(), re.I) and "extra" in marker:
                extras += re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        pass
    how = (f"pip install '{DISTRIBUTION}[{extras[0]}]'" if extras else f"pip install {dist}")
    return CommandError(f"`{command}` needs {dist}, which is not installed (an optional dependency): {how}")


@contextmanager
def optional_dependencies(command: str):
    """Around code that imports optional dependencies: a missing one becomes a CommandError that
    says what to install."""
    try:
        yield
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] in _OPTIONAL_MODULES:
            raise missing_extra(err, command) from None
        raise


# --- arguments ----------------------------------------------------------------------------------
def at_least(minimum: int):
    """An argparse type: an integer >= minimum (a usage error, exit 2, otherwise)."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    convert.__name__ = f"integer >= {minimum}"
    return convert


def add_max_depth(p) -> None:
    p.add_argument("--max-depth", type=at_least(1), default=strict.DEFAULT_MAX_DEPTH, metavar="N",
                   help=f"nesting deeper than N arrays/objects is an error (default {strict.DEFAULT_MAX_DEPTH})")


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "(not installed)"
