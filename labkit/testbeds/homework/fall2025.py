"""The 2025 homework (notebooks/homework/ai_testbeds_2025.ipynb): the CS-3 and the inference service.

    from labkit.testbeds.homework import fall2025
    config = fall2025.SPEC.from_notebook(globals())
    run = fall2025.run_exercise(config)        # both sections' runs gathered: a labkit.results.Run
    fall2025.show_testbed("cerebras", run)     # table, notes and GlobalRate, tokens/s against batch size

The course's homework (05-AITestbed/README.md, Fall 2025): **Cerebras**, "Run the Llama-7B example
for different batch sizes and compare the performance" (``cerebras/llama2_7b``, compared by
GlobalRate and tokens/s against the batch size, the course's default 1024 among them);
**SambaNova**, "compare the performance on GptOSS model using both Metis and Sophia"
(``sambanova/inference``, compared by TTFT, TPOT, E2EL and output throughput).

The whole 2025 offering (``SPEC``, ``TESTBEDS``, ``METRICS``, ``HOMEWORK``); the steps are the
ones both years share, and ``comparison``, ``plot`` and ``nothing_yet`` take 2025's sections.
"""

from __future__ import annotations

from functools import partial

from labkit.params import PATH, Param, Spec, folder_path
from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS as CS3
from labkit.testbeds.homework import report
from labkit.testbeds.homework.exercise import plan, record_runs, run_exercise, runs_for, runs_of
from labkit.testbeds.homework.homeworks import Homework, Section, overview_table, register
from labkit.testbeds.homework.report import endpoint_table, overview, plot_endpoints, show, show_testbed
from labkit.testbeds.sambanova.inference.metrics import METRICS as INFERENCE

__all__ = ["SPEC", "METRICS", "TESTBEDS", "HOMEWORK", "plan", "run_exercise", "show", "show_testbed", "record_runs",
           "runs_for", "runs_of", "comparison", "plot", "overview", "nothing_yet"]

SPEC = Spec(
    "homework/ai_testbeds_2025",
    Param("logs_dir", PATH, "logs", "folder with one sub-folder per testbed: cerebras/ (CS-3 logs such as "
                                    "mytest.log), sambanova/ (saved endpoint responses and transcripts)",
          check=folder_path),
    Param("runs_dir", PATH, "runs", "folder with one sub-folder per testbed of lab-book notebooks executed by "
                                    "`labkit run` or `labkit sweep --out runs/<testbed>`", check=folder_path),
)

# The portable commands were timed on labkit's shared 2-core machine (docs/grading.md, "The 2025 homework").
TESTBEDS = {
    "cerebras": Section(
        "cerebras/llama2_7b", ("batch_size",),
        CS3.select("global_rate", "tokens_per_s", "final_loss", "train_seconds", "staging_s", "checkpoint_s",
                   "compile_cached"),
        CS3.select("global_rate", "tokens_per_s"),
        "labkit sweep notebooks/cerebras/llama2_7b.ipynb -p batch_size 2,8,1024 -p model_size tiny -p steps 2 "
        "-p log_steps 1 -p sequence_length 16 -p device cpu --out runs/cerebras",
        "the course's `cszoo fit configs/params_llama2_7b.yaml ... |& tee mytest.log` with "
        "`train_input.batch_size` changed (or the lab book's notebook with `device CSX`) on the CS-3",
        against="batch_size"),
    "sambanova": Section(
        "sambanova/inference", ("endpoint_names", "models", "dataset", "num_prompts", "concurrency"),
        # The run's own metrics are its reference configuration's (first endpoint, lowest level): the
        # table keeps the counts, and each endpoint's figures are the detail table's (report.endpoint_table).
        INFERENCE.select("endpoints", "requests", "requests_failed", "output_tokens_per_request"),
        INFERENCE.select("ttft_median", "tpot_median", "e2el_median"),
        "labkit run notebooks/sambanova/inference.ipynb runs/sambanova/local.ipynb -p num_prompts 20 "
        "-p local_model_size tiny -p concurrency [1] -p repeats 1 -p max_tokens 8",
        "the lab book's notebook against Metis and Sophia (`base_urls` and `models`: inference.ENDPOINTS, "
        "gpt-oss-120b on both; the old gpt-oss-120b-131072 is read as the same model; with your Globus token), or "
        "their responses saved with `curl` into logs/sambanova/",
        detail_table=endpoint_table, detail_plot=plot_endpoints),
}

METRICS = overview_table(SPEC.name, TESTBEDS)

HOMEWORK = register(Homework(2025, SPEC, TESTBEDS, METRICS,
                             {"cerebras": "CS-3", "sambanova": "ALCF service (Metis, Sophia)"},
                             "notebooks/homework/ai_testbeds_2025.ipynb", run_notes=True))

# The 2025 sections by default (the shared functions default to 2024's, which notebooks handed in
# before 2025 rely on): what to run when there is nothing yet, a section's table and its plot.
nothing_yet = partial(report.nothing_yet, homework=HOMEWORK)
comparison = partial(report.comparison, homework=HOMEWORK)
plot = partial(report.plot, homework=HOMEWORK)
