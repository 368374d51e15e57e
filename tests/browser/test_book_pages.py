"""The built lab book as a reader meets it: chromium opens index.html and follows a link.

    make setup-browser && make test-browser

tests/book checks every page and link of the HTML; this checks that a browser renders them: the
index's contents lead to the MNIST exercise, whose plot loads as an image and whose tables show.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def book_index(tmp_path_factory):
    pytest.importorskip("myst_nb", reason="the book extra is not installed (make setup installs it)")
    sys.path.insert(0, str(ROOT / "docs" / "book"))
    import build as book  # docs/book/build.py

    return book.build(tmp_path_factory.mktemp("book") / "html")


def test_the_index_leads_to_an_exercise_page_that_shows_its_plot(book_index, browser_context, artifacts):
    page = browser_context.new_page()
    try:
        page.goto(book_index.resolve().as_uri())
        assert "lab book" in page.title().lower(), page.title()
        link = page.locator("a[href$='graphcore-mnist.html']").first
        link.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("exercises/graphcore-mnist.html"), page.url
        assert "MNIST" in page.locator("h1").first.inner_text()
        images = page.locator("img[src$='.png']").evaluate_all(
            "els => els.map(e => ({w: e.naturalWidth, h: e.naturalHeight, ok: e.complete}))")
        assert images and all(i["ok"] and i["w"] >= 200 and i["h"] >= 150 for i in images), images
        assert page.locator("table").count() >= 2
        page.screenshot(path=str(artifacts / "book-graphcore-mnist.png"), full_page=False)
        page.go_back()
        assert page.url.endswith("index.html"), page.url
    finally:
        page.close()


def test_the_index_leads_first_to_the_current_offering_and_its_homework_page(book_index, browser_context, artifacts):
    """A 2025 student's first section is theirs, and its homework page renders its plots and tables."""
    page = browser_context.new_page()
    try:
        page.goto(book_index.resolve().as_uri())
        captions = page.locator("p.caption, span.caption-text").all_inner_texts()
        assert captions and captions[0].startswith("2025"), captions
        link = page.locator("a[href$='homework-ai_testbeds_2025.html']").first
        link.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("homework/homework-ai_testbeds_2025.html"), page.url
        assert "2025" in page.locator("h1").first.inner_text()
        images = page.locator("img[src$='.png']").evaluate_all(
            "els => els.map(e => ({w: e.naturalWidth, h: e.naturalHeight, ok: e.complete}))")
        assert len(images) >= 2 and all(i["ok"] and i["w"] >= 200 and i["h"] >= 150 for i in images), images
        assert page.locator("table").count() >= 4
        page.screenshot(path=str(artifacts / "book-homework-2025.png"), full_page=False)
    finally:
        page.close()
