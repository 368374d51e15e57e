"""End to end: `labkit sweep` over the real MNIST exercise at tiny parameters.

Two runs at once start against a cold, empty data directory: with no network here both
fail to download, take turns under the data cache's lock and fall back to the shipped
sample; neither corrupts the cache nor fails.
"""

from __future__ import annotations

from pathlib import Path

from labkit import cli, results, sweep
from labkit.sweep import task as sweep_task

ROOT = Path(__file__).resolve().parents[2]
MNIST = ROOT / "notebooks" / "graphcore" / "mnist.ipynb"


def test_mnist_sweep_two_seeds_in_parallel_on_a_cold_cache(tmp_path, capsys):
    cache = tmp_path / "cold-cache"
    out = tmp_path / "runs" / "mnist"
    status = cli.main(["sweep", str(MNIST), "-p", "epochs", "1", "-p", "max_train_samples", "400",
                       "-p", "max_test_samples", "100", "-p", "device", "cpu", "-p", "data_dir", str(cache),
                       "--repeats", "2", "--workers", "2", "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    table = sweep.collect(out)
    assert list(table["status"]) == ["complete", "complete"]
    assert sorted(table["seed"]) == [0, 1]
    assert table["test_accuracy"].between(0, 100).all()
    # torch in each kernel started with the worker's share of the cores, and the record says so
    share = sweep_task.share(2)
    for notebook in table["notebook"]:
        environment = results.read(out / notebook).runs[0].environment
        assert environment["torch_threads"] == share["threads"]
        assert environment["sweep_share"] == "{threads} of {cores} cores (2 workers at once)".format(**share)
    summary = (out / "summary.md").read_text()
    assert "**timings are per worker share**" in summary
    assert "## test_accuracy (%) — primary" in summary
    assert "same in every run: epochs = 1, max_train_samples = 400, max_test_samples = 100, device = cpu" in summary
    # the cache is intact: no half-written download left beside the lock
    assert not [p for p in cache.rglob("*") if p.is_file() and p.suffix in (".tmp", ".part")]
