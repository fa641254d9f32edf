"""MJCF models authored for robolearn, installed as ``robolearn.assets``."""

from __future__ import annotations

from pathlib import Path

from robolearn.errors import RobolearnError

ASSETS_DIR = Path(__file__).resolve().parent


def asset_path(relative: str) -> Path:
    """Absolute path of a file shipped in robolearn's assets, e.g. ``humanoid/humanoid.xml``."""
    path = ASSETS_DIR / relative
    if not path.is_file():
        shipped = sorted(str(p.relative_to(ASSETS_DIR)) for p in ASSETS_DIR.rglob("*.xml"))
        raise RobolearnError(f"no asset {relative!r}; shipped MJCF files: {', '.join(shipped)}")
    return path


def pretrained_path(task: str) -> Path:
    """The checkpoint shipped with robolearn for ``task``."""
    path = ASSETS_DIR / "pretrained" / task / "model.pt"
    if not path.is_file():
        shipped = sorted(p.parent.name for p in (ASSETS_DIR / "pretrained").glob("*/model.pt"))
        raise RobolearnError(
            f"no pretrained checkpoint ships for {task!r}; "
            f"pretrained tasks: {', '.join(shipped) or 'none'}"
        )
    return path
