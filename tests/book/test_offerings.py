"""One lab book, two offerings: docs/book/offerings.yml says which notebook belongs to which year,
and the README, docs/offerings.md and the book's index follow it, the current offering first.

    .venv/bin/python -m pytest tests/book/test_offerings.py -q

Fast: the book's sources are staged (docs/book/build.py's ``stage``) without running Sphinx;
tests/book/test_book.py checks the built site.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "docs" / "book"))
import build as book  # noqa: E402  (docs/book/build.py)


def _offerings():
    return book.offerings()


def test_every_notebook_belongs_to_exactly_one_offering():
    listed = [nb for offering in _offerings() for nb in offering["notebooks"]]
    assert len(listed) == len(set(listed)), "a notebook listed twice"
    present = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").rglob("*.ipynb")
                     if ".ipynb_checkpoints" not in p.parts)
    assert sorted(listed) == present, "offerings.yml and notebooks/ differ: {}".format(
        sorted(set(listed) ^ set(present)))


def test_offerings_yml_lists_the_registrys_notebooks_year_by_year():
    """docs/book/offerings.yml adds each year's title; which notebook is in which year is the registry's."""
    from labkit import exercises

    assert [(o["year"], o["notebooks"]) for o in _offerings()] == list(exercises.offerings().items())


def test_the_current_offering_comes_first():
    years = [offering["year"] for offering in _offerings()]
    assert years == sorted(years, reverse=True) and years[:2] == [2025, 2024]
    current = _offerings()[0]["notebooks"]
    for notebook in ("notebooks/cerebras/llama2_7b.ipynb", "notebooks/sambanova/inference.ipynb",
                     "notebooks/homework/ai_testbeds_2025.ipynb"):
        assert notebook in current


def _readme_tables():
    """The README's notebook tables before its first section: {year: [notebook, ...]} in order of appearance."""
    head = (ROOT / "README.md").read_text().split("\n## ", 1)[0]
    tables, year = [], None
    for line in head.splitlines():
        heading = re.match(r"\*\*(\d{4})\b", line)
        if heading:
            year = int(heading.group(1))
            tables.append((year, []))
        cell = re.match(r"\| `(notebooks/[^`]+\.ipynb)` \|", line)
        if cell:
            assert year is not None, "a notebook row before any offering's heading: " + line
            tables[-1][1].append(cell.group(1))
    return tables


def test_the_readme_lists_each_offering_in_its_own_table_current_first():
    tables = _readme_tables()
    assert [year for year, _ in tables] == [o["year"] for o in _offerings()]
    for (year, notebooks), offering in zip(tables, _offerings()):
        assert notebooks == offering["notebooks"], "README's {} table: {}".format(year, notebooks)


def test_docs_say_which_notebook_belongs_to_which_offering():
    text = (ROOT / "docs" / "offerings.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)
    for offering in _offerings():
        section = next(s for s in sections if s.startswith(str(offering["year"])))
        for notebook in offering["notebooks"]:
            assert "`{}`".format(notebook) in section, "docs/offerings.md: {} not under {}".format(
                notebook, offering["year"])
    assert book.guide_pages()[0].name == "offerings.md"  # the guide opens with it


def test_the_index_leads_with_the_current_offering(tmp_path):
    book.stage(tmp_path)
    index = (tmp_path / "index.md").read_text()
    captions = re.findall(r"^:caption: (.*)$", index, flags=re.M)
    titles = [o["title"] for o in _offerings()]
    shown = [c for c in captions if c in titles]
    assert shown == [t for t in titles if t in captions], captions  # in offerings.yml's order
    assert shown[0] == titles[0] and captions[0] == titles[0], captions  # the current offering first
    assert captions[-1] == "Guide" and "Other notebooks" not in captions
    # every golden page is under its own offering's caption
    blocks = dict(re.findall(r":caption: ([^\n]*)\n:maxdepth: 1\n\n(.*?)\n```", index, flags=re.S))
    for golden in book.golden_notebooks():
        year = book.offering_of(golden)
        title = next(o["title"] for o in _offerings() if o["year"] == year)
        section = "homework" if golden.parent.name == "homework" else "exercises"
        assert "{}/{}-{}".format(section, golden.parent.name, golden.stem) in blocks[title].split("\n")


def test_offerings_yml_is_what_build_reads():
    assert yaml.safe_load((ROOT / "docs" / "book" / "offerings.yml").read_text()) == _offerings()
