"""Open a class page (DIR/class.html) in the suite's chromium and report what a reader gets.

    from tests.browser.class_page import open_class_page
    seen = open_class_page("grades/class.html", screenshot="runs/browser/class.png")
    seen["render_ms"], seen["figures"], seen["outliers"], seen["requests"]

The page is opened from its file with nothing else reachable: every request it makes that is not
the file itself is recorded (a self-contained page makes none). ``render_ms`` is the time from the
navigation's start to the second animation frame after the load event (the figures are painted).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

from tests.browser import lab as lablib

__all__ = ["open_class_page"]


def open_class_page(path: Any, screenshot: Optional[str] = None, context: Any = None) -> Dict[str, Any]:
    """``context``: the suite's session ``browser_context`` where a test has it (Playwright's sync API
    cannot start a second time in a process where it runs); otherwise a chromium of its own."""
    if context is not None:
        page = context.new_page()
        try:
            return _read(page, path, screenshot)
        finally:
            page.close()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=lablib.chromium(), headless=True,
                                             args=lablib.CHROMIUM_FLAGS)
        try:
            return _read(browser.new_page(viewport={"width": 1366, "height": 1000}), path, screenshot)
        finally:
            browser.close()


def _read(page: Any, path: Any, screenshot: Optional[str]) -> Dict[str, Any]:
    url = Path(path).resolve().as_uri()
    requests = []
    page.on("request", lambda r: requests.append(r.url) if r.url != url else None)
    page.goto(url, wait_until="load", timeout=60000 * lablib.SLOWDOWN)
    render_ms = page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame("
                              "() => r(performance.now()))))")
    seen = page.evaluate("""() => ({
        figures: Array.from(document.querySelectorAll('figure')).map(f => ({
            id: f.id, points: f.querySelectorAll('circle').length, far: f.querySelectorAll('circle.far').length,
            width: f.querySelector('svg') ? f.querySelector('svg').getBoundingClientRect().width : 0})),
        outliers: Array.from(document.querySelectorAll('tr.outlier')).map(
            tr => Array.from(tr.cells).map(td => td.textContent)),
        checks: Array.from(document.querySelectorAll('section.check')).map(s => ({
            id: s.id, dots: s.querySelectorAll('svg circle').length,
            failure: s.querySelector('p').textContent})),
        rule: (document.getElementById('rule') || {}).textContent || '',
        duplicates: (document.getElementById('duplicates').nextElementSibling || {}).textContent || '',
        scripts: document.querySelectorAll('script').length,
    })""")
    if screenshot:
        page.screenshot(path=str(screenshot), full_page=False)
    return dict(seen, render_ms=render_ms, requests=requests, bytes=Path(path).stat().st_size)
