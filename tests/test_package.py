"""The installable package: layout, console script, assets, and a clean install elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

import robolearn

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "robolearn", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_version_and_help():
    out = run_cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"robolearn {robolearn.__version__}"
    out = run_cli("--help")
    assert out.returncode == 0 and "usage: robolearn" in out.stdout


def test_unknown_subcommand_is_one_line_and_exit_2():
    out = run_cli("fly")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "invalid choice" in out.stderr


def test_every_package_is_declared_in_pyproject():
    """A package missing from pyproject's list would silently not install."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = set(pyproject["tool"]["setuptools"]["packages"])
    mapping = {
        "robolearn": ROOT / "robolearn",
        "robolearn.envs": ROOT / "envs",
        "robolearn.tasks": ROOT / "tasks",
        "robolearn.assets": ROOT / "assets",
    }
    found = set()
    for prefix, folder in mapping.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder).parts
            found.add(".".join((prefix, *rel)))
    assert found == declared


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """The wheel pip builds from the checkout, and what the build printed."""
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return next(out.glob("robolearn-*.whl")), result.stdout + result.stderr


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[0]


def test_building_prints_no_warnings_and_ships_every_data_file(built):
    """Before: about 200 lines of setuptools' "Package would be ignored" per install (the
    data folders taken for undeclared packages), which a new user read as a failure."""
    path, printed = built
    assert "would be ignored" not in printed and "Warning" not in printed, printed[-3000:]
    names = set(zipfile.ZipFile(path).namelist())
    shipped = {
        f"robolearn/assets/{p.relative_to(ROOT / 'assets')}"
        for p in (ROOT / "assets").rglob("*")
        if p.is_file()
        and (p.suffix in (".xml", ".png", ".obj", ".stl", ".npz") or "pretrained" in p.parts)
    }
    static = ROOT / "robolearn/viewer/static"
    shipped |= {
        f"robolearn/viewer/static/{p.relative_to(static).as_posix()}"
        for p in static.rglob("*")
        if p.is_file()
    }
    # the page's three.js, vendored: the 3D view loads nothing from outside
    assert "robolearn/viewer/static/vendor/three/three.module.min.js" in names
    assert "robolearn/viewer/static/vendor/three/addons/controls/OrbitControls.js" in names
    assert shipped <= names, sorted(shipped - names)


def test_wheel_ships_assets_under_robolearn_and_no_top_level_tasks(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "robolearn/assets/humanoid/humanoid.xml" in names
    assert "robolearn/assets/humanoid/scene.xml" in names
    assert "robolearn/envs/humanoid.py" in names and "robolearn/tasks/__init__.py" in names
    assert "robolearn/tasks/velocity/g1_walk.py" in names  # the families' packages too
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"robolearn"}


def test_installed_wheel_works_from_another_folder(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = (
        "import robolearn, robolearn.sim as s; from robolearn.assets import asset_path;"
        "e = s.make_engine(asset_path('humanoid/scene.xml'), 2, s.SimCfg(engine='cpu')); e.step(2);"
        "print(robolearn.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(target))
    assert run_cli("--version", cwd=elsewhere, env=env).returncode == 0


def test_the_cli_offers_exactly_the_engines_there_are():
    from robolearn.cli.common import ENGINE_CHOICES
    from robolearn.sim import ENGINES

    assert tuple(ENGINE_CHOICES) == tuple(ENGINES)


def test_without_an_egl_library_mujoco_imports_and_rendering_says_what_to_install():
    """A headless machine without libEGL (a GPU server image without libglvnd): with
    MUJOCO_GL=egl, `import mujoco` itself fails, so robolearn switches rendering off there
    and a renderer asked for says what to install. The library's absence is simulated by
    making its load fail; MuJoCo, the env and the renderer are real."""
    script = """
import ctypes
real = ctypes.CDLL
def cdll(name, *args, **kwargs):
    if "EGL" in str(name):
        raise OSError(f"{name}: cannot open shared object file")
    return real(name, *args, **kwargs)
ctypes.CDLL = cdll
import os, robolearn, mujoco
print(os.environ["MUJOCO_GL"])
from robolearn.errors import RobolearnError
from robolearn.render.video import EnvRenderer
from robolearn.sim import SimCfg, make_engine
from robolearn.assets import asset_path
engine = make_engine(str(asset_path("humanoid/scene.xml")), 1, SimCfg(engine="cpu"))
try:
    EnvRenderer(engine)
except RobolearnError as exc:
    print(exc)
"""
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY")}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "disable"
    assert "cannot render offscreen with MUJOCO_GL=disable" in lines[1]
    assert "libegl1" in lines[1] and len(lines) == 2
