"""A graded folder written directly (no grading): N students of both offerings, for the class page.

    PYTHONPATH=$PWD python -m tests.grading.class_fixtures /tmp/class200 200    # to look at it

:func:`synthetic_class` writes what `labkit grade` leaves in its --out folder and the page reads:
``.labkit-grade/state.json`` (each student's checks, runs and fingerprints),
``.labkit-grade/rubric.json`` and ``executed/<student>.ipynb`` (the records). Every student has
the 2025 runs (CS-3 logs or portable LLaMA runs at three batch sizes; a measured inference run
against Metis and Sophia at concurrency 1, 2 and 4, or a saved two-endpoint results JSON) and the
2024 runs (MNIST on the IPU or portably at two learning rates; Groq latencies at two sequence
lengths), with a few per cent of noise. Four students are planted, one per misreading (see
:data:`PLANTED`); everyone else is honest.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any, Dict, List

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from labkit import results
from labkit.results import Run

__all__ = ["synthetic_class", "PLANTED", "CHECKS"]

#: misreading -> the student who makes it (their run is far from the class)
PLANTED = {"compile time read as training time": "s001", "prompt tokens counted as output tokens": "s002",
           "one request stream's throughput": "s003", "a portable run labelled as a testbed's": "s004"}
CHECKS = (("cs3_global_rate", 3.0), ("inference_both_endpoints", 2.0), ("q1_cs3", 4.0), ("runs_clean", 1.0))
CS3 = {512: 17.2, 1024: 31.99, 2048: 58.4}
PORTABLE_CS3 = {512: 2.1, 1024: 3.9, 2048: 6.8}
PROMPT_NOTE = ("metis: The results' own throughput_tokens_per_sec of 612.00 tokens/s counts prompt tokens as output "
               "(total tokens / latency); the completion tokens alone, the tokens generated, give 275.10 tokens/s.")
STREAM_NOTE = ("Nothing in the results shows two requests in flight at once (no concurrency setting, no overlapping "
               "start times), so no concurrency was measured: the throughput is one request stream's, not the "
               "endpoint's under load.")


def _runs(student: str, index: int, rng: random.Random) -> Dict[str, Run]:
    def noisy(value: float) -> float:
        return round(value * (1 + rng.uniform(-0.03, 0.03)), 4)

    runs: Dict[str, Run] = {}
    portable = index % 4 == 3
    for k, bs in enumerate(sorted(CS3), 1):
        if portable:
            run = Run("cerebras/llama2_7b", source="portable", params={"batch_size": bs, "device": "cpu"},
                      environment={"device": "cpu"})
            rate = PORTABLE_CS3[bs]
        else:
            run = Run("cerebras/llama2_7b", source="log", params={"batch_size": bs, "log": "mytest-bs%d.log" % bs})
            rate = CS3[bs]
        if student == PLANTED["a portable run labelled as a testbed's"]:  # a CPU run relabelled as a CS-3 log
            run = Run("cerebras/llama2_7b", source="log", params={"batch_size": bs, "log": "mytest.log"})
            rate = PORTABLE_CS3[bs]
        run.metrics.update(global_rate=noisy(rate), tokens_per_s=noisy(rate * 2048))
        runs["cerebras_%d" % k] = run
    if index % 3 == 0 or student in (PLANTED["prompt tokens counted as output tokens"],
                                      PLANTED["one request stream's throughput"]):
        run = Run("sambanova/inference", source="log", params={"response_kind": "results",
                                                               "endpoint_names": ["metis", "sophia"]})
        for endpoint, e2el, rate in (("metis", 5.0, 250.0 * 1.1), ("sophia", 1.5, 90.0 * 1.1)):  # one stream
            run.add_series("e2el_median_latency:" + endpoint, [1], [noisy(e2el)], x_label="concurrency")
            run.add_series("output_throughput:" + endpoint, [1], [noisy(rate)], x_label="concurrency")
        if student == PLANTED["prompt tokens counted as output tokens"]:  # its throughput is (prompt + output) / s
            run.series["output_throughput:metis"]["y"] = [612.0]
            run.notes.append(PROMPT_NOTE)
        if student == PLANTED["one request stream's throughput"]:  # one endpoint, requests one at a time
            run = Run("sambanova/inference", source="log", params={"response_kind": "results", "concurrency": 4,
                                                                   "endpoint_names": ["metis"]})
            run.metrics.update(e2el_median=noisy(5.0), output_throughput=noisy(275.0))  # one stream's, said to be 4's
            run.notes.append(STREAM_NOTE)
        run.metrics.setdefault("requests", 40)
    else:
        run = Run("sambanova/inference", source="testbed", params={"endpoint_names": ["metis", "sophia"]})
        for endpoint, ttft, tpot, rate in (("metis", 0.4, 0.004, 250.0), ("sophia", 0.25, 0.012, 90.0)):
            for prefix, value in (("ttft_median_time", ttft), ("tpot_median_time", tpot),
                                  ("output_throughput", rate)):
                run.add_series("{}:{}".format(prefix, endpoint), [1, 2, 4],
                               [noisy(value * (c if prefix == "output_throughput" else 1 + 0.1 * c))
                                for c in (1, 2, 4)],
                               x_label="concurrency")
        run.metrics.update(requests=240)
    runs["sambanova_1"] = run
    on_ipu = index % 2 == 0
    for k, lr in enumerate((0.03, 0.3), 1):
        if on_ipu:
            run = Run("graphcore/mnist", source="log", params={"learning_rate": lr, "log_kind": "training"})
            run.metrics.update(test_accuracy=noisy(97.0 if lr == 0.03 else 92.0), train_throughput=noisy(30000.0),
                               mean_epoch_time=noisy(2.0), train_compile_time=noisy(28.0))
        else:
            run = Run("graphcore/mnist", source="portable", params={"learning_rate": lr, "device": "cpu"},
                      environment={"device": "cpu"})
            run.metrics.update(test_accuracy=noisy(96.0 if lr == 0.03 else 91.0), train_throughput=noisy(3000.0),
                               mean_epoch_time=noisy(20.0), train_compile_time=0.0)
        if student == PLANTED["compile time read as training time"]:  # the first epoch, compile included
            run = Run("graphcore/mnist", source="log", params={"learning_rate": lr, "log_kind": "training"})
            run.metrics.update(test_accuracy=noisy(97.0 if lr == 0.03 else 92.0), train_throughput=noisy(30000.0),
                               train_compile_time=28.0, mean_epoch_time=2.0 + 28.0)
        runs["graphcore_%d" % k] = run
    for k, seq in enumerate((64, 128), 1):
        run = Run("groq/bert_tiny", source="log", params={"max_seq_length": seq, "build_name": "b%d" % seq})
        run.metrics.update(groq_e2e_latency_ms=noisy(0.05 * seq / 64), cpu_e2e_latency_ms=noisy(2.0 * seq / 64))
        runs["groq_%d" % k] = run
    return runs


def _where(run: Run) -> str:
    from labkit.testbeds.homework.hardware import where_it_ran
    return where_it_ran(run)


def synthetic_class(out: Path, students: int, seed: int = 0) -> List[str]:
    """Write a graded folder of ``students`` students into ``out``; return their names."""
    rng = random.Random(seed)
    out = Path(out)
    (out / "executed").mkdir(parents=True, exist_ok=True)
    (out / ".labkit-grade").mkdir(exist_ok=True)
    state: Dict[str, Any] = {}
    names = ["s%03d" % i for i in range(students)]
    for index, student in enumerate(names):
        runs = _runs(student, index, rng)
        outputs = [new_output("display_data", data={results.SCRAP_MIME: results.scrap(run, name=name)},
                              metadata={"scrapbook": {"name": name, "data": True, "display": False}})
                   for name, run in runs.items()]
        cell = new_code_cell("fall2025.record_runs(...)", outputs=outputs, execution_count=1)
        nbformat.write(new_notebook(cells=[cell]), str(out / "executed" / (student + ".ipynb")))
        checks = []
        for name, points in CHECKS:
            score = points if rng.random() > 0.2 else rng.choice([0.0, points / 2])
            checks.append({"name": name, "points": points, "score": score, "passed": score >= points,
                           "reason": "" if score >= points else "global_rate = {} is outside >= 20".format(index)})
        shared = {"ab" * 32: "log logs/cerebras/mytest.log"} if index in (5, 6) else {}
        state[student] = {"student": student, "key": "k%d" % index, "status": "ok", "checks": checks,
                          "total": sum(c["score"] for c in checks), "max_total": sum(p for _, p in CHECKS),
                          "runs": [{"name": n, "exercise": r.exercise, "where": _where(r)} for n, r in runs.items()],
                          "fingerprints": dict(shared, **{"%064x" % (index + 1): "log logs/own.log"})}
    (out / ".labkit-grade" / "state.json").write_text(json.dumps({"version": 1, "results": state}))
    (out / ".labkit-grade" / "rubric.json").write_text(json.dumps({"title": "Homework: a synthetic class",
                                                                    "checks": [n for n, _ in CHECKS]}))
    return names


if __name__ == "__main__":
    print(len(synthetic_class(Path(sys.argv[1]), int(sys.argv[2]))))
