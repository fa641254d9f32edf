"""The one error type for a user's mistake.

A user's mistake (an unknown task or engine, a bad value, a missing file, an MJCF that does
not compile, a model feature an engine lacks) raises :class:`RobolearnError` with a message
that names what was wrong and what is valid. The CLI prints that message as one line and
exits with status 2; any other exception is a bug in robolearn.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class RobolearnError(ValueError):
    """A mistake in the user's input; the message says what is wrong and what is valid."""


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """Return ' (did you mean X?)' for the closest valid names, or '' when none is close."""
    close = difflib.get_close_matches(name, list(valid), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
