"""Sphinx configuration of the lab book (built by docs/book/build.py; see `make book`).

The notebooks are the golden executed copies: myst-nb shows their stored outputs (tables,
plots, printed results) and never executes them.
"""

project = "labkit: the AI testbeds lab book"
author = "labkit"
extensions = ["myst_nb"]
nb_execution_mode = "off"
# A run record is machine-readable data for `labkit results`; on a page it would be noise.
nb_mime_priority_overrides = [("html", "application/scrapbook.scrap.json+json", None)]
# Headings inside stored HTML outputs are not the page outline.
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "alabaster"
html_title = project
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
html_theme_options = {"description": "The course's exercises, run and recorded: 2025 (Cerebras CS-3, SambaNova "
                                     "Metis) and 2024 (Graphcore, Cerebras CS-2, SambaNova SN30, Groq)",
                      "show_relbars": True}
html_show_sourcelink = False
