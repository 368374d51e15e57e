"""How heavy the class page is: its size, the time to draw it, and the time chromium takes to render it.

    PYTHONPATH=$PWD python benchmarks/class_page.py                 # classes of 50 and 200
    PYTHONPATH=$PWD python benchmarks/class_page.py --students 400 --repeat 7

A graded folder of N students of both offerings is written directly (tests/grading/class_fixtures.py:
CS-3 and LLaMA runs at three batch sizes, Metis and Sophia at three concurrencies or a saved
results JSON, MNIST at two learning rates, Groq at two sequence lengths). Timed in this process,
interleaved, ``--repeat`` times: the reference, ``summary.md`` of the same class (what `labkit
grade` rewrites after every submission already), and the page, ``class_html`` of the class's data
(its records read once, as the grader's cache keeps them); printed: median and range, the ratio to
the reference, the page's size. Then, where Debian's chromium and Playwright are installed, the
page is opened from its file ``--repeat`` times: the milliseconds from navigation to the second
frame after load (median and range). The targets: under 2 MB and under 2 s for 200 students.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labkit.grading.reports.class_page import class_html, read_class  # noqa: E402
from labkit.grading.reports.gradebook import class_summary, summary_markdown  # noqa: E402
from tests.grading.class_fixtures import synthetic_class  # noqa: E402


def _spread(values):
    return "{:.3f} s [{:.3f}, {:.3f}]".format(statistics.median(values), min(values), max(values))


def measure(students: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out"
        synthetic_class(out, students)
        cache: dict = {}
        data = read_class(str(out), cache)
        reference, page = [], []
        for _ in range(repeat):  # interleaved: the machine's load falls on both alike
            start = time.perf_counter()
            summary_markdown(class_summary(data.results, data.checks), len(data.results), data.title)
            reference.append(time.perf_counter() - start)
            start = time.perf_counter()
            html = class_html(read_class(str(out), cache))
            page.append(time.perf_counter() - start)
        (out / "class.html").write_text(html)
        print("{} students, {} points: summary.md {}, class page {} ({:.0f}x), page {:.2f} MB".format(
            students, len(data.rows), _spread(reference), _spread(page),
            statistics.median(page) / statistics.median(reference), len(html.encode()) / 1e6))
        try:
            from tests.browser.class_page import open_class_page
            renders = [open_class_page(out / "class.html")["render_ms"] for _ in range(repeat)]
        except ImportError as exc:
            print("  chromium render: not measured ({})".format(exc))
            return
        print("  chromium render: {:.0f} ms [{:.0f}, {:.0f}]".format(statistics.median(renders), min(renders),
                                                                   max(renders)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, action="append", help="class sizes (default 50 and 200)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for students in args.students or [50, 200]:
        measure(students, args.repeat)


if __name__ == "__main__":
    main()
