"""A class of 22 for the 2025 homework, honest and broken hand-ins mixed, every kind of evidence.

    PYTHONPATH=$PWD python -m tests.homework.classroom_2025 /tmp/class25     # build it to look at it

Evidence is made cheaply: CS-3 logs from the course's real sample at other batch sizes and rates
(tests/homework/cs3_logs.py), and the lab book's own notebooks run once at tiny sizes
(:func:`make_lab_runs`: a `labkit sweep` of the LLaMA exercise over three batch sizes, the course's
1024 among them, and two runs of the inference notebook against the local stand-in server, one with
20 prompts and one with 5), copied into the students' `runs/` folders. Each student hands in
``ai_testbeds_2025.ipynb`` with `logs/` and `runs/`; the comment of each student below says why their
row of tests/homework/class/expected_gradebook_2025.csv holds those numbers. Points (the rubric):
cs3_global_rate 3, cs3_batch_sizes 4, q1 4, inference_both_endpoints 2, inference_prompts 2,
inference_streaming 2, q2 5, q3 3, reproduces 2, runs_clean 1 = 28, and portable_reruns 2 for a
student who handed in portable LLaMA runs (graded with --reproduce).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import nbformat

from labkit.testbeds.homework import fall2025
from tests.homework import classroom
from tests.homework.cs3_logs import write_cs3_log

REPO = classroom.REPO
HOMEWORK = REPO / "notebooks" / "homework" / "ai_testbeds_2025.ipynb"
RUBRIC = REPO / "notebooks" / "homework" / "ai_testbeds_2025.rubric.yml"
EXPECTED = Path(__file__).resolve().parent / "class" / "expected_gradebook_2025.csv"
NOTEBOOK = "ai_testbeds_2025.ipynb"

#: The lab book's runs every portable student copies (made once by make_lab_runs).
LAB_RUNS: Dict[str, List[List[str]]] = {
    "cerebras": [["sweep", "notebooks/cerebras/llama2_7b.ipynb", "-p", "batch_size", "2,8,1024", "-p", "model_size",
                  "tiny", "-p", "steps", "2", "-p", "log_steps", "1", "-p", "sequence_length", "16", "-p", "device",
                  "cpu", "--out", "{runs}/cerebras"]],
    "sambanova": [["run", "notebooks/sambanova/inference.ipynb", "{runs}/sambanova/local.ipynb", "-p", "num_prompts",
                   "20", "-p", "local_model_size", "tiny", "-p", "concurrency", "[1]", "-p", "repeats", "1", "-p",
                   "max_tokens", "8"],
                  ["run", "notebooks/sambanova/inference.ipynb", "{runs}/sambanova-few/few.ipynb", "-p", "num_prompts",
                   "5", "-p", "local_model_size", "tiny", "-p", "concurrency", "[1]", "-p", "repeats", "1", "-p",
                   "max_tokens", "8"]],
}

#: CS-3 logs: (batch size, GlobalRate) made from the course's sample (1024: its own 31.99 samples/s).
CS3 = {"bs512": (512, 17.2), "bs1024": (1024, 31.99), "bs2048": (2048, 58.4), "bs4096": (4096, 96.1)}
ALL_CS3 = ["bs512", "bs1024", "bs2048"]

ANSWERS = {
    1: "The GlobalRate grew with the batch size, from about 17 samples per second at 512 to 32 at the default 1024 and "
       "58 at 2048, so tokens per second grew the same way: a larger batch spreads the fixed cost of every step over "
       "more samples and keeps the wafer's cores streaming. Staging took about 284 s (weights sent, the device "
       "programmed, input workers started) and the checkpoint save about 464 s after the last step: neither is "
       "training, so the speed is the GlobalRate, never samples divided by the Processed seconds.",
    2: "Both endpoints served gpt-oss-120b, the same weights, so the differences come from how they are served. The "
       "time to first token was lower on one and the time per output token on the other: Metis runs SambaNova's "
       "dataflow stack on the SN40L with the model held in its memory tiers, while Sophia runs vLLM on A100 GPUs with "
       "continuous batching, so prefill and decoding cost differently. The client's times include the network, the "
       "ALCF gateway and queueing, which the server's own timings leave out; output lengths differed, so I compared "
       "per output token, and differences inside the spread between repeats I do not count as differences.",
    3: "The CS-3 logs are measurements of the CS-3 and the endpoint runs measure the ALCF service as a client sees "
       "it; the portable runs model the exercises on my CPU and only show how the numbers respond to batch size and "
       "concurrency. Next I would repeat the endpoint runs at several concurrency levels on different days.",
}


def make_lab_runs(folder: Path, commands_by_testbed: Optional[Dict[str, List[List[str]]]] = None) -> Path:
    """Run the lab book's notebooks once at tiny sizes (:data:`LAB_RUNS`) into ``folder/runs``; return it."""
    runs = Path(folder) / "runs"
    env = dict(os.environ, LABKIT_PROGRESS="text")
    for testbed, commands in (commands_by_testbed or LAB_RUNS).items():
        for argv in commands:
            cmd = [sys.executable, "-m", "labkit"] + [a.format(runs=runs) for a in argv]
            Path(cmd[-1] if argv[0] == "sweep" else os.path.dirname(cmd[5])).mkdir(parents=True, exist_ok=True)
            proc = subprocess.run(cmd, cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                raise RuntimeError("{} failed:\n{}".format(" ".join(cmd), proc.stdout.decode(errors="replace")[-3000:]))
        for png in (runs / testbed).glob("plot_*.png"):  # the sweep's own plots: not evidence
            png.unlink()
    return runs


#: The golden copy's evidence (tests/golden/golden.yml): smaller still, the notebook only reads it.
GOLDEN_RUNS: Dict[str, List[List[str]]] = {
    "cerebras": [["sweep", "notebooks/cerebras/llama2_7b.ipynb", "-p", "batch_size", "2,4,8", "-p", "model_size",
                  "tiny", "-p", "steps", "2", "-p", "log_steps", "1", "-p", "sequence_length", "16", "-p", "device",
                  "cpu", "--out", "{runs}/cerebras"]],
    "sambanova": [["run", "notebooks/sambanova/inference.ipynb", "{runs}/sambanova/local.ipynb", "-p", "num_prompts",
                   "4", "-p", "local_model_size", "tiny", "-p", "concurrency", "[1]", "-p", "repeats", "1", "-p",
                   "max_tokens", "8"]],
}


def make_golden_evidence(folder: Path) -> Path:
    """``folder/evidence_2025/``: CS-3 logs at 512, 1024 and 2048 in logs/cerebras/ and tiny portable runs of
    both exercises in runs/ (what the golden copy of the 2025 homework reads)."""
    evidence = Path(folder) / "evidence_2025"
    shutil.rmtree(str(evidence), ignore_errors=True)
    for key in ALL_CS3:
        write_cs3_log(evidence / "logs" / "cerebras", *CS3[key])
    make_lab_runs(evidence, GOLDEN_RUNS)
    return evidence


def _answer_cells(nb) -> Dict[int, int]:
    return classroom._answer_cells(nb)


def _copy_runs(lab: Path, folder: Path, kinds: List[str]) -> None:
    """kinds: "llama" (the LLaMA sweep), "inference" (20 prompts), "few" (5 prompts)."""
    source = {"llama": (lab / "cerebras", folder / "runs" / "cerebras"),
              "inference": (lab / "sambanova", folder / "runs" / "sambanova"),
              "few": (lab / "sambanova-few", folder / "runs" / "sambanova")}
    for kind in kinds:
        src, dst = source[kind]
        dst.mkdir(parents=True, exist_ok=True)
        for item in src.iterdir():
            if item.is_dir():
                shutil.copytree(str(item), str(dst / item.name))
            else:
                shutil.copyfile(str(item), str(dst / item.name))


def _student(dest: Path, name: str, lab: Path, cs3: List[str], runs: List[str], answers: Dict[int, str],
             outputs: bool = False, edit: Optional[Dict[str, Dict[str, float]]] = None, before: Optional[str] = None,
             after_testbed: Optional[Dict[str, str]] = None, replace: Optional[Dict[str, str]] = None,
             extra_logs: Optional[Dict[str, str]] = None) -> Path:
    folder = dest / name
    folder.mkdir(parents=True, exist_ok=True)
    for key in cs3:
        write_cs3_log(folder / "logs" / "cerebras", *CS3[key])
    for relative, text in (extra_logs or {}).items():
        (folder / "logs" / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / "logs" / relative).write_text(text)
    _copy_runs(lab, folder, runs)
    classroom.write_homework(HOMEWORK, folder / NOTEBOOK, answers, fall2025, outputs=outputs, edit=edit, before=before,
                             after_testbed=after_testbed, replace=replace)
    return folder


FABRICATED_CS3 = """import labkit.results as R
for number, (bs, rate) in enumerate([(512, 40.0), (1024, 80.0), (2048, 160.0)], 1):
    R.record(R.Run("cerebras/llama2_7b", source="log", params={"batch_size": bs, "log_run": 0,
             "log": "logs/cerebras/mytest-bs1024.log"}, metrics={"global_rate": rate}), name="cerebras_%d" % number)"""

MONKEYPATCH = """import labkit.logs
_real_read = labkit.logs.read
def _faster(path, *args, **kwargs):
    report = _real_read(path, *args, **kwargs)
    for run in report.runs:
        if "global_rate" in run.metrics:
            run.metrics["global_rate"] = run.metrics["global_rate"] * 10
    return report
labkit.logs.read = _faster"""

#: A student's own JSON of results (one endpoint, not streamed): read like a log, one request per item.
RESULTS_JSON = json.dumps({"results": [{"prompt": "Question {}".format(i), "latency_s": 3.0 + 0.1 * i,
                                        "completion_tokens": 90 + i, "prompt_tokens": 12} for i in range(20)]})


def _claimed_params(folder: Path) -> None:
    """Edit the 5-prompt inference notebook's papermill parameters to claim 20 prompts (its record still says 5)."""
    path = folder / "runs" / "sambanova" / "few.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    nb.metadata["papermill"]["parameters"]["num_prompts"] = 20
    nbformat.write(nb, str(path))


def build_class(dest: Path, lab: Path) -> List[str]:
    """Write the class into ``dest`` from the lab runs in ``lab`` (make_lab_runs); return the student names."""
    dest = Path(dest)
    good = dict(ANSWERS)
    both = ["inference"]
    # ada: CS-3 logs at 512, 1024 and 2048, the inference notebook against the stand-in, run before
    # handing in -> 28 of 28.
    _student(dest, "ada", lab, ALL_CS3, both, good, outputs=True)
    # ben: the same, handed in without running it: reproduce 0 -> 26.
    _student(dest, "ben", lab, ALL_CS3, both, good)
    # cara: no ALCF account: the portable LLaMA sweep (batch 2, 8, 1024) and the stand-in runs -> 26 + the
    # grader's re-run of her shortest LLaMA run 2 = 28 of 30.
    _student(dest, "cara", lab, [], ["llama", "inference"], good)
    # dev: CS-3 logs at 512, 2048 and 4096, not the course's 1024: batch sizes 4 x 2/3 -> 26 - 4/3 = 24.667.
    _student(dest, "dev", lab, ["bs512", "bs2048", "bs4096"], both, good)
    # eli: two batch sizes (1024, 2048): 4 x 2/3 -> 24.667.
    _student(dest, "eli", lab, ["bs1024", "bs2048"], both, good)
    # fay: typed CS-3 records by hand (a real log, made-up rates): the grader re-reads the log and rejects
    # them: global rate 0, batch sizes 0 -> 26 - 7 = 19.
    _student(dest, "fay", lab, ALL_CS3, both, good, replace={"cerebras": FABRICATED_CS3})
    # gil: CS-3 logs and the portable LLaMA runs together: every batch size counts once -> 26 + rerun 2 = 28 of 30.
    _student(dest, "gil", lab, ALL_CS3, ["llama", "inference"], good)
    # hana: a JSON of her own results (20 prompts to one endpoint, not streamed) instead of the notebook:
    # read (labelled Metis/Sophia: a saved response of the service), but one endpoint, 20 requests, no time
    # to first token: inference 0 of 6 -> 20.
    _student(dest, "hana", lab, ALL_CS3, [], good, extra_logs={"sambanova/results.json": RESULTS_JSON})
    # ian: the inference notebook with 5 prompts: two endpoints and streamed, but 10 requests -> 26 - 2 = 24.
    _student(dest, "ian", lab, ALL_CS3, ["few"], good)
    # jo: monkeypatches labkit.logs.read to report ten times the GlobalRate: recomputation rejects every
    # CS-3 record -> 19.
    _student(dest, "jo", lab, ALL_CS3, both, good, before=MONKEYPATCH)
    # kai: ran it, then edited two recorded numbers in the outputs: 2 of 4 records reproduce -> 26 + 1 = 27.
    _student(dest, "kai", lab, ALL_CS3, both, good, outputs=True,
             edit={"cerebras_2": {"global_rate": 64.0}, "sambanova_1": {"ttft_median": 0.001}})
    # lea: an endless loop after the CS-3 section: stopped by the cell limit; CS-3 7 + answers 12 -> 19.
    _student(dest, "lea", lab, ALL_CS3, both, good, after_testbed={"cerebras": "while True:\n    pass"})
    # max: kills the kernel before any run: only the written answers count -> 12.
    _student(dest, "max", lab, ALL_CS3, both, good, before="import os\nos._exit(1)")
    # ned: the notebook as handed out, nothing else: only "ran without error" -> 1.
    _student(dest, "ned", lab, [], [], {})
    # ola: a notebook file that is not JSON: unreadable -> 0.
    (dest / "ola").mkdir()
    (dest / "ola" / NOTEBOOK).write_text('{"cells": [')
    # pat: everything, Question 2 in eight words (8/60 of 5 = 0.667) and Question 3 left as the template
    # -> 26 - 5 + 0.667 - 3 = 18.667.
    _student(dest, "pat", lab, ALL_CS3, both, {1: good[1], 2: "Metis was faster because SambaNova hardware is faster."})
    # quin: last year's CS-2 BERT-Large logs in logs/cerebras/: not the LLaMA exercise, not counted -> 19.
    quin = _student(dest, "quin", lab, [], both, good)
    for key in ("cb_1024", "cb_2048", "cb_512"):
        testbed, filename = classroom.LOGS[key]
        (quin / "logs" / "cerebras").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(str(classroom.fixtures_dir() / testbed / filename), str(quin / "logs" / "cerebras" / filename))
    # ray: tries to read the others' work and to overwrite the gradebook: an error, the rest still runs -> 25.
    _student(dest, "ray", lab, ALL_CS3, both, good, before="import glob\nprint(glob.glob('../../*/*'))\n"
             "open('../../gradebook.csv', 'w').write('ray,28')")
    # sam: the 5-prompt notebook with its papermill parameters edited to say 20: the evidence is refused
    # (the notebook ran with 20 but its record says 5), so no inference record counts -> 26 - 6 = 20.
    sam = _student(dest, "sam", lab, ALL_CS3, ["few"], good)
    _claimed_params(sam)
    # tia: CS-3 logs only, no inference evidence: the inference section says what to run -> 26 - 6 = 20.
    _student(dest, "tia", lab, ALL_CS3, [], good)
    # uma: everything, plus her saved results JSON beside the notebook's runs -> 28.
    _student(dest, "uma", lab, ALL_CS3, both, good, outputs=True, extra_logs={"sambanova/results.json": RESULTS_JSON})
    # vic: the portable LLaMA sweep only for the CS-3 section, no inference, ran it -> 28 - 6 + rerun 2 = 24 of 30.
    _student(dest, "vic", lab, [], ["llama"], good, outputs=True)
    # wes: CS-3 logs and his script's results JSON of both endpoints (5 prompts each, not streamed, sent one at
    # a time), whose own throughput counts prompt tokens: 10 requests, no TTFT -> 28 - 6 + 2 = 22 (both
    # endpoints 2, prompts 0, streaming 0, reproduce 0); the class page names both misreadings.
    _student(dest, "wes", lab, ALL_CS3, [], good, extra_logs={"sambanova/metis_vs_sophia.json": (
        REPO / "tests" / "sambanova" / "evidence" / "student_results_by_endpoint.json").read_text()})
    return sorted(p.name for p in dest.iterdir())


if __name__ == "__main__":
    target = Path(sys.argv[1])
    print(json.dumps(build_class(target / "submissions", make_lab_runs(target / "lab"))))
