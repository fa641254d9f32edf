"""The JSON objects of a results file, one per line, for the GPU check's summaries."""

from __future__ import annotations

import json
from pathlib import Path


def json_rows(path: Path) -> list[dict]:
    """Every line of ``path`` that is a JSON object (a step's stdout may hold other lines);
    none when the step left no file (it was skipped or stopped)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
