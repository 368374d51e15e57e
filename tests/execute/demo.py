"""A small notebook and spec module, generated in tmp_path, that the run/sweep tests execute.

Its metrics depend on the parameters and, through the seed, on noise, the way a real
training notebook's do, but it needs no dataset and runs in a fraction of a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import nbformat

SPEC_MODULE = '''
from labkit.params import Param, Spec

DEMO_SPEC = Spec(
    "tests/demo",
    Param("epochs", int, 3, min=1, max=100, help="training epochs"),
    Param("learning_rate", float, 0.1, min=0, min_exclusive=True),
    Param("seed", int, 0, min=0),
    Param("mode", str, "ok", choices=("ok", "error", "crash", "hang", "diverge")),
    Param("noise", float, 0.3, min=0),
    Param("cache_dir", str, "", help="a shared 'dataset' cache to fill on first use ('' for none)"),
)
'''

PARAMETERS = 'epochs = 3\nlearning_rate = 0.1\nseed = 0\nmode = "ok"\nnoise = 0.3\ncache_dir = ""\n'

BODY = '''import os, random, time
from labkit.results import Run, record
rng = random.Random(config.seed)
cache_ok = None
if config.cache_dir:  # a 'download' into a shared cache, written in slow chunks, under labkit's lock
    from labkit.data.cache import locked
    data = os.path.join(config.cache_dir, "data.bin")
    with locked(config.cache_dir):
        if not os.path.exists(data):
            with open(os.path.join(config.cache_dir, "downloads.log"), "a") as log:
                log.write("downloaded by seed %d\\n" % config.seed)
            with open(data, "wb") as f:
                for chunk in range(20):
                    f.write(bytes([chunk]) * 4096)
                    f.flush()
                    time.sleep(0.15)
    with open(data, "rb") as f:
        content = f.read()
    cache_ok = content == b"".join(bytes([c]) * 4096 for c in range(20))
if config.mode == "error":
    raise RuntimeError("asked to fail")
if config.mode == "crash":
    os._exit(3)
if config.mode == "hang":
    time.sleep(60)
accuracy = 80 + 2 * config.epochs + 10 * config.learning_rate + rng.gauss(0, config.noise)
loss = float("nan") if config.mode == "diverge" else 1.0 / config.epochs + rng.random() * 0.01
run = Run("tests/demo", status="diverged" if config.mode == "diverge" else "complete",
          params=config.to_dict())
run.add_metric("accuracy", accuracy, "%")
run.add_metric("loss", loss)
run.add_metric("cwd_has_spec", os.path.exists("demo_spec.py"))
run.add_metric("visible_gpu", os.environ.get("CUDA_VISIBLE_DEVICES", "none"))
run.add_metric("cache_ok", cache_ok)
run.add_metric("slurm_job", os.environ.get("SLURM_JOB_ID", "none"))
run.add_metric("throughput", 1000 + 50 * config.epochs + rng.gauss(0, 10 * config.noise), "samples/s")
run.add_metric("omp_threads", os.environ.get("OMP_NUM_THREADS", "unset"))
record(run)
'''


def make_demo(folder: Path, name: str = "demo.ipynb", with_spec: bool = True,
              parameters: Optional[str] = None) -> Path:
    """Write demo_spec.py and a notebook into ``folder``; return the notebook path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "demo_spec.py").write_text(SPEC_MODULE)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell(parameters if parameters is not None else PARAMETERS)
    params.metadata["tags"] = ["parameters"]
    if with_spec:
        nb.metadata["labkit"] = {"spec": "demo_spec:DEMO_SPEC"}
        check = "import demo_spec\nconfig = demo_spec.DEMO_SPEC.from_notebook(globals())"
    else:
        check = ("from labkit.params import Config\n"
                 "config = Config(dict(epochs=epochs, learning_rate=learning_rate, seed=seed, mode=mode, noise=noise, "
                 "cache_dir=cache_dir))")
    nb.cells = [nbformat.v4.new_markdown_cell("# Demo"), params, nbformat.v4.new_code_cell(check),
                nbformat.v4.new_code_cell(BODY)]
    path = folder / name
    nbformat.write(nb, str(path))
    return path
