"""MNIST throughput in JupyterLab against headless papermill, same notebook, same machine.

    .venv/bin/python benchmarks/lab_throughput.py                       # 2 epochs, full MNIST, 3 rounds
    .venv/bin/python benchmarks/lab_throughput.py --train 12000 --rounds 5 --modes headless,lab

notebooks/graphcore/mnist.ipynb runs in each mode, rounds interleaved (the machine is shared
and noisy: compare medians of the same round order, not single runs):

- ``headless``: papermill, text progress bars (what `labkit run`, nbval and CI do);
- ``widgets``: papermill with LABKIT_PROGRESS=widget: the kernel sends JupyterLab's widget
  messages but nobody renders them (isolates the progress widgets' own cost);
- ``lab``: a kernel started by `jupyter lab`, Run All clicked in chromium, then the page is
  closed: JupyterLab's kernel with no browser attached (the browser is not competing);
- ``browser``: the same with the page left open, chromium rendering on the same cores.

Each run appends a cell that writes the run's metrics and torch's thread count to JSON; the
table gives train and test samples/s per mode (median and range) and each mode's ratio to
headless. Needs `make setup-browser` for the lab modes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser.lab import CHROMIUM_FLAGS, Lab, NotebookPage, chromium  # noqa: E402

MODES = ("headless", "widgets", "lab", "browser")
PROBE = ("import json, torch\n"
         "json.dump(dict(result.run.metrics, torch_threads=torch.get_num_threads()), open({!r}, 'w'))")


def prepare(folder: Path, name: str, parameters: dict, metrics: Path) -> Path:
    """A copy of the MNIST notebook with ``parameters`` set in its cell and a probe cell at the end."""
    nb = json.loads((ROOT / "notebooks" / "graphcore" / "mnist.ipynb").read_text())
    for cell in nb["cells"]:
        if "parameters" in cell["metadata"].get("tags", []):
            cell["source"] = "".join(cell["source"]) + "".join(
                "\n{} = {!r}".format(k, v) for k, v in parameters.items())
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                        "source": PROBE.format(str(metrics))})
    path = folder / (name + ".ipynb")
    path.write_text(json.dumps(nb))
    return path


def wait_for(path: Path, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            time.sleep(0.5)
            return json.loads(path.read_text())
        time.sleep(1)
    raise TimeoutError("no metrics in {} after {:.0f} s".format(path, timeout))


def run_headless(notebook: Path, metrics: Path, widgets: bool, timeout: float) -> dict:
    env = dict(os.environ)
    env.pop("LABKIT_PROGRESS", None)
    if widgets:
        env["LABKIT_PROGRESS"] = "widget"
    subprocess.run([str(Path(sys.executable).parent / "papermill"), str(notebook), str(notebook.with_suffix(".out.ipynb")),
                    "--cwd", str(notebook.parent)], env=env, check=True, timeout=timeout,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(metrics.read_text())


def run_in_lab(lab: Lab, context, notebook: Path, metrics: Path, keep_page: bool, timeout: float) -> dict:
    page = context.new_page()
    try:
        view = NotebookPage(page, lab, str(notebook.relative_to(lab.root))).open()
        view.activate()
        page.locator(".lm-MenuBar-item", has_text="Run").first.click()
        page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
        # Training has started (the config cell ran) before the page goes away.
        page.wait_for_function("() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]"
                               ".filter(p => /\\[[0-9]/.test(p.innerText)).length >= 2", timeout=600000)
        if not keep_page:
            page.close()
        result = wait_for(metrics, timeout)
        del view
        return result
    finally:
        if not page.is_closed():
            page.close()
        lab.shutdown_kernels()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train", type=int, default=None, help="max_train_samples (default: all 60,000)")
    parser.add_argument("--test", type=int, default=None, help="max_test_samples (default: all 10,000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    parameters = {"epochs": args.epochs, "device": "cpu", "max_train_samples": args.train,
                  "max_test_samples": args.test}
    work = Path(tempfile.mkdtemp(prefix="labkit-lab-bench-"))
    (work / "root").mkdir()
    (work / "state").mkdir()
    samples = {m: [] for m in modes}
    lab = context = playwright = None
    try:
        if {"lab", "browser"} & set(modes):
            from playwright.sync_api import sync_playwright

            lab = Lab(work / "root", work / "state").start()
            playwright = sync_playwright().start()
            context = playwright.chromium.launch_persistent_context(
                str(work / "profile"), executable_path=chromium(), headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1366, "height": 1000})
        for round_ in range(args.rounds):
            order = modes[round_ % len(modes):] + modes[:round_ % len(modes)]  # rotate: no mode always first
            for mode in order:
                name = "{}-{}".format(mode, round_)
                metrics = work / (name + ".json")
                notebook = prepare(work / "root", name, parameters, metrics)
                if mode in ("headless", "widgets"):
                    m = run_headless(notebook, metrics, mode == "widgets", args.timeout)
                else:
                    m = run_in_lab(lab, context, notebook, metrics, mode == "browser", args.timeout)
                samples[mode].append(m)
                print("round {} {:9s} train {:7.0f}  test {:7.0f} samples/s  torch threads {}".format(
                    round_, mode, m["train_throughput"], m["test_throughput"], m["torch_threads"]), flush=True)
    finally:
        if context is not None:
            context.close()
            playwright.stop()
        if lab is not None:
            lab.stop()
        shutil.rmtree(str(work), ignore_errors=True)
    print("\nmode        train samples/s (median, range)      test samples/s (median, range)   vs headless")
    base = {k: statistics.median(r[k] for r in samples["headless"]) for k in ("train_throughput", "test_throughput")} \
        if samples.get("headless") else None
    for mode in modes:
        cols = []
        for key in ("train_throughput", "test_throughput"):
            values = [r[key] for r in samples[mode]]
            cols.append("{:7.0f} ({:.0f}-{:.0f})".format(statistics.median(values), min(values), max(values)))
        ratio = ""
        if base:
            ratio = "train {:.2f}, test {:.2f}".format(
                *(statistics.median(r[k] for r in samples[mode]) / base[k] for k in ("train_throughput", "test_throughput")))
        print("{:9s} {:>30s} {:>32s}   {}".format(mode, cols[0], cols[1], ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
