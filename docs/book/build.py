"""Build the lab book: a static HTML site of the golden executed notebooks and docs/.

    make book                                   # -> build/book/index.html
    .venv/bin/python docs/book/build.py OUT     # any output folder

One page per exercise (every tests/golden/<testbed>/<exercise>.ipynb, in golden.yml's order),
the homework (any executed copy under tests/golden/homework/, picked up when it exists), the
grading guide and the other docs/ pages, with navigation between them. Sphinx with myst-nb
renders the notebooks' stored outputs; nothing is executed.

The index leads with one section per offering of the course (docs/book/offerings.yml: the
current one first), each holding its exercises and its homework, so a student of either year
finds their own notebooks first; then the guide.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GOLDEN = ROOT / "tests" / "golden"
DOCS = ROOT / "docs"
#: docs/ pages in the order a reader wants them (others follow alphabetically).
GUIDE_FIRST = ["offerings.md", "grading.md", "graphcore.md", "cerebras.md", "sambanova.md", "groq.md", "jobs.md"]


def offerings() -> List[Dict[str, Any]]:
    """docs/book/offerings.yml: ``[{"year", "title", "notebooks"}]``, the current offering first."""
    return yaml.safe_load((HERE / "offerings.yml").read_text())


def source_notebook(golden: Path) -> str:
    """The lab-book notebook a golden copy was executed from (golden.yml's ``notebook``)."""
    entries = yaml.safe_load((GOLDEN / "golden.yml").read_text()) or {}
    entry = entries.get(_key(golden)) or {}
    return entry.get("notebook") or "notebooks/{}.ipynb".format(_key(golden))


def offering_of(golden: Path) -> Optional[int]:
    """The year of the offering a golden copy's notebook belongs to (None: in no offering)."""
    source = source_notebook(golden)
    for offering in offerings():
        if source in offering["notebooks"]:
            return offering["year"]
    return None


def golden_notebooks() -> List[Path]:
    """Executed copies, golden.yml's order first, then any other (e.g. the homework's)."""
    order = list(yaml.safe_load((GOLDEN / "golden.yml").read_text()) or {})
    found = sorted(p for p in GOLDEN.glob("*/*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    rank = {key: i for i, key in enumerate(order)}
    return sorted(found, key=lambda p: (rank.get(_key(p), len(rank)), _key(p)))


def guide_pages() -> List[Path]:
    pages = sorted(DOCS.glob("*.md"))
    first = [DOCS / name for name in GUIDE_FIRST if (DOCS / name).exists()]
    return first + [p for p in pages if p not in first]


def _key(notebook: Path) -> str:
    return "{}/{}".format(notebook.parent.name, notebook.stem)


def _toctree(caption: str, entries: List[str]) -> str:
    return "```{{toctree}}\n:caption: {}\n:maxdepth: 1\n\n{}\n```\n".format(caption, "\n".join(entries))


def stage(source: Path) -> None:
    """Lay out the book's sources in ``source``: conf.py, index.md, exercises/, homework/, guide/."""
    shutil.copyfile(str(HERE / "conf.py"), str(source / "conf.py"))
    pages: Dict[Any, List[str]] = {}
    for notebook in golden_notebooks():
        section = "homework" if notebook.parent.name == "homework" else "exercises"
        name = "{}/{}-{}".format(section, notebook.parent.name, notebook.stem)
        (source / section).mkdir(exist_ok=True)
        shutil.copyfile(str(notebook), str(source / (name + ".ipynb")))
        pages.setdefault(offering_of(notebook), []).append(name)
    (source / "guide").mkdir()
    guide = []
    for page in guide_pages():
        shutil.copyfile(str(page), str(source / "guide" / page.name))
        guide.append("guide/" + page.stem)
    years = [o["year"] for o in offerings()]
    index = ["# The AI testbeds lab book", "",
             "The course's exercises as labkit runs them, with their outputs: each page is the executed "
             "notebook that `pytest --nbval` checks (small, deterministic parameters). Open "
             "`notebooks/<testbed>/<exercise>.ipynb` in JupyterLab to run one yourself.", "",
             "The lab book serves {} offerings of the course: the {} course's exercises and homework come first, "
             "then {}'s ([the offerings](guide/offerings.md) says what changed).".format(
                 len(years), years[0], ", ".join(str(y) for y in years[1:])), ""]
    for offering in offerings():
        # homework last within its offering: the exercises it gathers come first
        entries = sorted(pages.get(offering["year"], []), key=lambda n: n.startswith("homework/"))
        if entries:
            index.append(_toctree(offering["title"], entries))
    if pages.get(None):
        index.append(_toctree("Other notebooks", pages[None]))
    index.append(_toctree("Guide", guide))
    (source / "index.md").write_text("\n".join(index))


def build(out: Path, quiet: bool = True) -> Path:
    """Build the site into ``out`` and return its index.html; raises CalledProcessError on failure."""
    out = Path(out).resolve()
    with tempfile.TemporaryDirectory(prefix="labkit-book-") as tmp:
        source, site = Path(tmp) / "source", Path(tmp) / "site" / "html"
        source.mkdir()
        stage(source)
        # Built inside tmp: myst-nb keeps its cache and extracted outputs beside the HTML folder.
        command = [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-d", str(Path(tmp) / "doctrees"),
                   str(source), str(site)]
        subprocess.run(command + (["-q"] if quiet else []), check=True)
        if out.exists():
            shutil.rmtree(str(out))
        shutil.copytree(str(site), str(out))
    return out / "index.html"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print("The lab book:", build(Path(sys.argv[1]), quiet=False))
