"""`make book`: the golden notebooks and docs/ as a static site (docs/book/build.py).

    .venv/bin/python -m pytest tests/book -q

Built once into a temporary folder: every page is there, every internal link and image resolves
(fragments included), every exercise page shows its plot, and navigation joins the pages.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "docs" / "book"))
pytest.importorskip("myst_nb", reason="the book extra is not installed (make setup installs it)")
import build as book  # noqa: E402  (docs/book/build.py)


class Page(HTMLParser):
    """Links, image sources and element ids of one HTML page."""

    def __init__(self, path: Path):
        super().__init__()
        self.path, self.links, self.images, self.ids = path, [], [], set()
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("book") / "html"
    index = book.build(out)
    assert index.is_file()
    return out


def _pages(site):
    return {p: Page(p) for p in site.rglob("*.html")}


def _target(page: Path, href: str):
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith("mailto:"):
        return None, None  # external
    path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    return path, parts.fragment


def test_every_page_is_there(site):
    expected = ["index.html"]
    expected += ["exercises/{}-{}.html".format(nb.parent.name, nb.stem) for nb in book.golden_notebooks()
                 if nb.parent.name != "homework"]
    expected += ["homework/{}-{}.html".format(nb.parent.name, nb.stem) for nb in book.golden_notebooks()
                 if nb.parent.name == "homework"]
    expected += ["guide/{}.html".format(p.stem) for p in book.guide_pages()]
    assert "guide/grading.html" in expected and len(book.golden_notebooks()) >= 5
    missing = [name for name in expected if not (site / name).is_file()]
    assert not missing, missing
    index = Page(site / "index.html")
    for name in expected[1:]:
        assert name in index.links, "{} is not linked from the index".format(name)


def test_every_internal_link_and_image_resolves(site):
    pages = _pages(site)
    broken = []
    for path, page in pages.items():
        for href in page.links + page.images:
            target, fragment = _target(path, href)
            if target is None:
                continue
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append("{} -> {}".format(path.relative_to(site), href))
            elif fragment and target.suffix == ".html" and fragment not in pages[target].ids:
                broken.append("{} -> {} (no such anchor)".format(path.relative_to(site), href))
    assert not broken, broken[:20]


def test_every_exercise_page_shows_its_plot_and_tables(site):
    for notebook in book.golden_notebooks():
        section = "homework" if notebook.parent.name == "homework" else "exercises"
        path = site / section / "{}-{}.html".format(notebook.parent.name, notebook.stem)
        page = Page(path)
        plots = [src for src in page.images if src.endswith(".png")]
        assert plots, "{}: no plot".format(path.name)
        for src in plots:
            target, _ = _target(path, src)
            assert target.stat().st_size > 5000, "{}: {} is not a real plot".format(path.name, src)
        html = path.read_text(encoding="utf-8")
        assert "<table" in html, "{}: no table".format(path.name)


def test_pages_are_joined_by_navigation(site):
    first = book.golden_notebooks()[0]
    page = Page(site / "exercises" / "{}-{}.html".format(first.parent.name, first.stem))
    nav = {_target(page.path, href)[0] for href in page.links}
    assert (site / "index.html").resolve() in nav  # up to the contents
    exercises = sorted((site / "exercises").glob("*.html"))
    assert len(nav & {p.resolve() for p in exercises}) >= 2  # the sidebar lists the others


def test_the_index_leads_with_the_current_offerings_pages(site):
    """A student of this year's course finds their exercises first (docs/book/offerings.yml's order)."""
    year_of = {}
    for golden in book.golden_notebooks():
        section = "homework" if golden.parent.name == "homework" else "exercises"
        year_of["{}/{}-{}.html".format(section, golden.parent.name, golden.stem)] = book.offering_of(golden)
    html = (site / "index.html").read_text(encoding="utf-8")
    start = html.index('class="toctree-wrapper')  # the contents on the page, not the sidebar or the relbar
    end = html.index('class="related', start)
    body = Page.__new__(Page)
    HTMLParser.__init__(body)
    body.path, body.links, body.images, body.ids = site / "index.html", [], [], set()
    body.feed(html[start:end])
    order = []
    for href in body.links:
        year = year_of.get(urlsplit(href).path)
        if year is not None and (not order or order[-1] != year):
            order.append(year)
    years = [o["year"] for o in book.offerings()]
    assert order == [y for y in years if y in set(year_of.values())], order  # one block per offering, in order
    assert order[0] == years[0]
    contents = html[start:end]
    assert contents.index(book.offerings()[0]["title"].split(":")[0]) < contents.index(
        book.offerings()[1]["title"].split(":")[0])  # the captions too
