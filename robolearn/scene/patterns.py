"""Regex lookups over names: which of a list of names a config's patterns select. Below
every other scene module (configs, entities, the Scene's names), so that any of them can
check a pattern."""

from __future__ import annotations

import re
from collections.abc import Sequence

from robolearn.errors import RobolearnError


def match_names(names: Sequence[str], patterns: str | Sequence[str], what: str) -> list[int]:
    """Indices of ``names`` that fully match any regex in ``patterns``, in ``names`` order.

    Raises RobolearnError naming the valid names if a pattern matches nothing, and the
    regex's own error if a pattern is not one.
    """
    ids: list[int] = []
    for pattern, regex in compile_patterns(patterns, what):
        hits = [i for i, n in enumerate(names) if regex.fullmatch(n)]
        if not hits:
            raise RobolearnError(
                f"no {what} matches {pattern!r}; {what}s: {', '.join(n for n in names if n)}"
            )
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
