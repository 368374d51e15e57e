"""The homework's batch-size study: `labkit sweep` over the LLaMA notebook, three batch sizes, two repeats."""

from __future__ import annotations

from pathlib import Path

from labkit import cli, sweep

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "cerebras" / "llama2_7b.ipynb"


def test_a_three_batch_size_sweep_with_two_repeats_summarises_globalrate_and_tokens(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "runs" / "llama-batch"
    status = cli.main(["sweep", str(NOTEBOOK), "-p", "batch_size", "1,2,4", "-p", "model_size", "tiny",
                       "-p", "steps", "6", "-p", "log_steps", "3", "-p", "sequence_length", "16", "-p", "device", "cpu",
                       "--repeats", "2", "--workers", "2", "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    table = sweep.collect(out)
    assert sorted(zip(table["batch_size"], table["seed"])) == [(1, 0), (1, 1), (2, 0), (2, 1), (4, 0), (4, 1)]
    assert set(table["status"]) == {"complete"}
    assert (table["samples"] == table["batch_size"] * 6).all()
    assert ((table["tokens_per_s"] - table["global_rate"] * 16).abs() <= 0.01 * table["tokens_per_s"] + 0.1).all()
    summary = (out / "summary.md").read_text()
    assert "## global_rate (samples/s) — primary" in summary
    assert "## tokens_per_s (tokens/s) — primary" in summary
    assert "## final_loss — primary" in summary
    statistics = sweep.tables.summary_frame(str(out))
    rates = statistics[statistics["metric"] == "global_rate"]
    assert sorted(rates["batch_size"]) == [1, 2, 4] and (rates["n"] == 2).all()
