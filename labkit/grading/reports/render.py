"""The HTML pages grading writes (the class page, each student's feedback), drawn from the Jinja2 templates in
labkit/grading/reports/templates/ with autoescape on: every value a template prints is escaped unless it is
markup the templates themselves made, so a student's name, run, unit or reason is shown as text.

The templates are written over several lines for reading; the pages have no whitespace between their tags
(a class of 200 draws about 6,000 points), so a line break and the indentation after it are dropped when a
template is loaded: text that goes on over a line break ends its line with a space and an empty comment,
``{# #}``, and a template writes a line break it wants as ``{{ "\\n" }}``.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Tuple

import jinja2

__all__ = ["render", "macro"]

_BREAK = re.compile(r"\n[ \t]*")


class _Joined(jinja2.PackageLoader):
    """The package's templates, each with its line breaks and the indentation after them dropped."""

    def get_source(self, environment: jinja2.Environment, template: str) -> Tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        return _BREAK.sub("", source), filename, uptodate


_ENV = jinja2.Environment(loader=_Joined("labkit.grading.reports", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined)
# numbers as str.format writes them: {{ value|fmt(".3g") }} is "{:.3g}".format(value)
_ENV.filters["fmt"] = format


def _spelled(page: str) -> str:
    """The page with a quote spelled as ``html.escape`` spells it (``&#x27;``, ``&quot;``), not markupsafe.

    One spelling whatever drew the page, so the same results give the same bytes (`labkit class DIR` redraws
    the page `labkit grade` wrote, and a diff of two gradings shows only what changed). Every ``&#39;`` or
    ``&#34;`` in a rendered page is one the escape wrote: a student's own ``&#39;`` is escaped to
    ``&amp;#39;``, and the templates hold none.
    """
    return page.replace("&#39;", "&#x27;").replace("&#34;", "&quot;")


def render(template: str, **context: Any) -> str:
    """The page ``template`` (a file name in templates/) draws from ``context``."""
    return _spelled(_ENV.get_template(template).render(**context))


def macro(template: str, name: str, *args: Any) -> str:
    """The markup the macro ``name`` of ``template`` draws from ``args`` (a part of a page, alone)."""
    return _spelled(str(getattr(_ENV.get_template(template).module, name)(*args)))
