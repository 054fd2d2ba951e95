"""The errors of reading a tool's schema into rules."""

from ..error_base import Gemma4Error


class SchemaError(ValueError, Gemma4Error):
    """A tool's schema that no call could satisfy, or that the rules cannot read (an unknown
    `$ref`, a name the format cannot write); the message names the tool and the place."""


class NoValue(SchemaError):
    """A schema none of whose values the format can write (an enum of strings holding control
    tokens): an optional property or an anyOf option with it is left out."""

