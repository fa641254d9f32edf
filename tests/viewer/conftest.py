"""The viewer tests' fixtures (their helpers: helpers.py)."""

from __future__ import annotations

import pytest

from .helpers import CHROMIUM, START_S


@pytest.fixture
def browser():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: the set-up command installs it (scripts/setup.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            timeout=START_S * 1000,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
                # WebGL2 without a GPU, for the 3D mode: SwiftShader, which Chromium no
                # longer falls back to unasked
                "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader",
            ],
        )
        yield b
        b.close()
