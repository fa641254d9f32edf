"""Regex lookups over names: which of a list of names a config's patterns select. Below
every other scene module (configs, entities, the Scene's names), so that any of them can
check a pattern."""

from __future__ import annotations

import re
from collections.abc import Sequence

from robolearn.errors import RobolearnError


class NoMatchError(RobolearnError):
    """A name pattern that matches none of the names it was looked up in; it carries the
    pattern, the patterns it was given among and what was looked for, so that whoever knows
    the config field that held the pattern (a manager, for a term's params) can name it."""

    def __init__(
        self, pattern: str, patterns: str | Sequence[str], what: str, names: Sequence[str]
    ):
        self.pattern = pattern
        """The pattern that matched nothing."""
        self.patterns = patterns
        """Every pattern of the lookup, as given (a string or a sequence)."""
        self.what = what
        """What the names are (``geom``, ``buddy joint``)."""
        self.names = list(names)
        """The names looked in (some may be empty: unnamed elements)."""
        super().__init__(f"no {what} matches {pattern!r}; {self.listing()}")

    def __reduce__(self):  # pickled (a sweep's trial, a rank) with its fields, not its text
        return type(self), (self.pattern, self.patterns, self.what, self.names)

    def listing(self) -> str:
        """The names there are, as ``geoms: a, b (12 unnamed)``."""
        named = [n for n in self.names if n]
        unnamed = len(self.names) - len(named)
        # a vendor's collision geoms are often unnamed: say they exist, or the list misleads
        more = f" ({unnamed} unnamed)" if unnamed else ""
        kind = f"{self.what[:-1]}ies" if self.what.endswith("dy") else f"{self.what}s"
        return f"{kind}: {', '.join(named) or 'none'}{more}"


def match_names(names: Sequence[str], patterns: str | Sequence[str], what: str) -> list[int]:
    """Indices of ``names`` that fully match any regex in ``patterns``, in ``names`` order.

    Raises :class:`NoMatchError` (a RobolearnError) naming the valid names if a pattern
    matches nothing, and RobolearnError with the regex's own error if a pattern is not one.
    """
    ids: list[int] = []
    for pattern, regex in compile_patterns(patterns, what):
        hits = [i for i, n in enumerate(names) if regex.fullmatch(n)]
        if not hits:
            raise NoMatchError(pattern, patterns, what, names)
        ids.extend(h for h in hits if h not in ids)
    return sorted(ids)


def compile_patterns(patterns: str | Sequence[str], what: str) -> list[tuple[str, re.Pattern[str]]]:
    """Each pattern with its compiled regex; one that is not a regex is a RobolearnError
    naming it (as the pattern of a ``what``) and the regex's own error."""
    if isinstance(patterns, str):
        patterns = [patterns]
    compiled = []
    for pattern in patterns:
        try:
            compiled.append((pattern, re.compile(pattern)))
        except (re.error, TypeError) as exc:
            raise RobolearnError(
                f"the {what} pattern {pattern!r} is not a regular expression: {exc}"
            ) from exc
    return compiled
