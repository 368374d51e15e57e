"""Fixtures of the browser tests: one JupyterLab server and one chromium for the session.

They run only when asked (`make test-browser` sets LABKIT_BROWSER_TESTS=1: they take minutes,
so `make test` leaves them out) and skip, saying why, when chromium or Playwright is missing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.browser import cases as catalogue
from tests.browser import lab as lablib

ROOT = Path(__file__).resolve().parent.parent.parent


def pytest_collection_modifyitems(config, items):
    reason = None
    if os.environ.get("LABKIT_BROWSER_TESTS") != "1":
        reason = "browser tests run with `make test-browser` (LABKIT_BROWSER_TESTS=1)"
    elif lablib.chromium() is None:
        reason = "no chromium at {} (or LABKIT_CHROMIUM): `make setup-browser` installs Debian's".format(
            ", ".join(lablib.CHROMIUM_CANDIDATES))
    else:
        try:
            import playwright  # noqa: F401
        except ImportError:
            reason = "Playwright is not installed in this environment: `make setup-browser` installs it"
    if reason:
        here = Path(__file__).parent
        for item in items:
            if here in Path(str(item.fspath)).parents:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def artifacts():
    folder = Path(os.environ.get("LABKIT_BROWSER_ARTIFACTS") or ROOT / "runs" / "browser")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    lablib.copy_notebooks(base / "root", [(c.key, c.evidence) for c in catalogue.CASES if c.evidence])
    (base / "state").mkdir()
    server = lablib.Lab(base / "root", base / "state").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")  # a new, empty --user-data-dir
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=lablib.chromium(), headless=True, args=lablib.CHROMIUM_FLAGS,
            viewport={"width": 1366, "height": 1600})
        context.set_default_timeout(60000 * lablib.SLOWDOWN)
        yield context
        context.close()
    shutil.rmtree(str(profile), ignore_errors=True)
