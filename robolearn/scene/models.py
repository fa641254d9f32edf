"""Where a scene's MJCF comes from: the one place a model name becomes a file.

A model is named by a path relative to robolearn's shipped assets (``humanoid/scene.xml``)
or by any path on disk. Robot configs, entities and ``robolearn inspect`` all resolve their
models here, so a new kind of source (a model collection installed as a package) is added
in this module alone.
"""

from __future__ import annotations

from pathlib import Path

from robolearn.assets import ASSETS_DIR
from robolearn.errors import RobolearnError


def resolve_model_path(model: str) -> Path:
    """An MJCF path from a SceneCfg: robolearn's assets first, then the filesystem."""
    if not model:
        raise RobolearnError("scene.model is empty: name an MJCF file")
    shipped = ASSETS_DIR / model
    if shipped.is_file():
        return shipped
    path = Path(model).expanduser()
    if path.is_file():
        return path.resolve()
    choices = sorted(str(p.relative_to(ASSETS_DIR)) for p in ASSETS_DIR.rglob("scene.xml"))
    raise RobolearnError(
        f"scene.model {model!r} is neither a robolearn asset nor a file; "
        f"robolearn assets: {', '.join(choices)}"
    )
