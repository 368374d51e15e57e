"""SambaNova logs of the course's ``BertLarge.sh`` flow (SambaFlow under Slurm), read as
``labkit.logs.read("BertLarge.out", format="sambanova")``.

The flow writes a compile log, the training log the batch job writes to the same path, and
``slurm-<id>.out``, which only points to it; a ``script`` capture of a shell session is one
submission per ``./BertLarge.sh``. What each gives: docs/logs.md (the SambaNova rows).

Verified only against real logs from the course; no SambaFlow runs here.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from labkit.divergence import divergence_note, loss_divergence
from labkit.logs.base import NUMBER, LineReader, new_run
from labkit.testbeds.sambanova.bert_large.metrics import METRICS

__all__ = ["SambaNovaReader", "POINTER"]

_MODEL = re.compile(r"^Model:\s+(\S+)")
_DATE = re.compile(r"^Date:\s+(\S+)")
_TIME = re.compile(r"^Time:\s+(\S+)")
_VERSION = re.compile(r"^sambaflow/\S+?,.*?now (\S+)")
_COMPILE = re.compile(r"^COMPILE (START|END) AT (\d+)")
_SUBMITTED = re.compile(r"Submitted batch job (\d+)")
_SBATCH_ERROR = re.compile(r"sbatch: error: (.*)")
_DURATION = re.compile(r"^Duration:\s+(\d+)")
_SLURM = re.compile(r"^SLURM_(NTASKS|NTASKS_PER_NODE|NNODES|JOB_ID)=(\d+)\s*$")
_FLAG = {
    "batch_size": re.compile(r"(?:\s-b|--batch-size|--per_device_train_batch_size)\s+(\d+)"),
    "max_seq_length": re.compile(r"--max_seq_length\s+(\d+)"),
    "steps_this_run": re.compile(r"--steps_this_run\s+(\d+)"),
}
_SBATCH_FLAGS = {
    "ntasks": re.compile(r"--ntasks[= ](\d+)"),
    "ntasks_per_node": re.compile(r"--ntasks-per-node[= ](\d+)"),
    "nodes": re.compile(r"--nodes[= ](\d+)"),
}
_STEP = re.compile(r"global_step:(\d+)\|.*?step_loss:(" + NUMBER + r")")
_RANK = re.compile(r"- (Rank \d+|Process ID \d+)")
_E2E = re.compile(r"'(e2e_train_time|training_sequences_per_second|final_loss|training_samples_per_second)':\s*(" +
                  NUMBER + r")")
_ASSERT = re.compile(r"AssertionError: Expected throughput to be at (least|most) (" + NUMBER +
                     r"), instead found (" + NUMBER + r")")
POINTER = re.compile(r"Using (\S+) for output")
_PEF_EXISTS = re.compile(r"(\S+\.pef) exists")
_SCRIPT = re.compile(r"\$ \./(\w+)\.sh\b")

DURATION_NOTE = ("'Duration: {}' covers compiling and submitting the job only, never training: the "
                 "training runs later as batch job {} and writes its own log.")
CACHED_NOTE = ("'Duration: {}' with no COMPILE START/END: compilation was skipped because a compiled PEF "
               "(bertlrg.pef) already existed; this second is submission only.")
OUTPUT_NOTE = ("The batch job writes the training log to the job's output directory (the BertLarge.out that "
               "slurm-<id>.out names in its 'Using ... for output' line), not to slurm-<id>.out.")
TOKENS_NOTE = ("training_sequences_per_second = ntasks x batch x steps x max_seq_length / e2e_train_time "
               "= {} x {} x {} x {} / {:.1f} s = {:.0f}: it counts tokens per second, not sequences. "
               "Sequences per second: {:.1f}.")
FLAT_NOTE = ("Each rank runs a fixed number of steps (steps_this_run={}), so the wall time (e2e {:.0f} s) "
             "stays about flat as --ntasks changes while the throughput grows with ntasks: compare "
             "throughput (per task: {:.0f}), not time.")
ASSERT_NOTE = ("The run trained and printed its metrics; the AssertionError that follows is the script's "
               "throughput check (expected at {} {:.0f}, found {:.0f}), not a training failure.")
REJECT_NOTE = ("sbatch rejected the job ({}): no training happened. Slurm refuses --ntasks greater than "
               "--nodes x --ntasks-per-node at submission.")


class _Run:
    def __init__(self) -> None:
        self.run = new_run("sambanova/bert_large")
        self.kind: Optional[str] = None  # compile | training | submission
        self.compile_start = False
        self.compile_end: Optional[int] = None
        self.duration: Optional[int] = None
        self.job: Optional[int] = None
        self.rejected: Optional[str] = None
        self.steps: List[int] = []
        self.losses: List[float] = []
        self.rank: Optional[str] = None
        self.ranks: set = set()  # every rank (or process id) that logged a step
        self.e2e: Dict[str, float] = {}
        self.assertion: Optional[tuple] = None
        self.traceback = False
        self.pef_exists: Optional[str] = None
        self.pointer: Optional[str] = None
        self.anything = False


class SambaNovaReader(LineReader):
    format = "sambanova"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self.cur = _Run()
        self.sbatch_flags: Dict[str, int] = {}  # from a shell session's git diff
        self.session = False

    def feed(self, line: str) -> None:
        if not line:
            return
        cur = self.cur
        head = line[:1]
        if head == "M" and line.startswith("Model:"):
            m = _MODEL.match(line)
            if m:
                if cur.anything and not self.session:
                    cur = self._close()
                cur.run.params["model"] = m.group(1)
                cur.anything = True
                return
        if "$ ./" in line:
            m = _SCRIPT.search(line)
            if m:
                self.session = True
                cur = self._close()
                cur.kind = "submission"
                cur.anything = True
                cur.run.params.update(self.sbatch_flags)
                return
        if "sbatch" in line and "--ntasks" in line and line[:1] in "+-":
            # A git diff of BertLarge.sh in a shell session: "-" is the old line, "+" the new one.
            flags = {k: int(m.group(1)) for k, rx in _SBATCH_FLAGS.items() for m in [rx.search(line)] if m}
            if line[0] == "+" or not self.sbatch_flags:
                self.sbatch_flags = flags
            return
        if head in "DTs":
            m = _DURATION.match(line)
            if m:
                cur.duration = int(m.group(1))
                cur.anything = True
                return
            for rx, key in ((_DATE, "date"), (_TIME, "time"), (_VERSION, "sambaflow")):
                m = rx.match(line)
                if m:
                    cur.run.environment[key] = m.group(1)
                    return
        if head == "C":
            m = _COMPILE.match(line)
            if m:
                cur.kind = cur.kind or "compile"
                if m.group(1) == "START":
                    cur.compile_start = True
                    cur.anything = True
                else:
                    cur.compile_end = int(m.group(2))
                return
        if head == "S" and line.startswith("SLURM_"):
            m = _SLURM.match(line)
            if m:
                key = "nodes" if m.group(1) == "NNODES" else m.group(1).lower()
                cur.run.params[key] = int(m.group(2))
                cur.kind = _training_kind(cur.kind)
                cur.anything = True
            return
        if "COMMAND:" in line:
            for key, rx in _FLAG.items():
                m = rx.search(line)
                if m:
                    cur.run.params.setdefault(key, int(m.group(1)))
            if line.startswith("RUN COMMAND"):
                cur.kind = _training_kind(cur.kind)
            cur.anything = True
            return
        if "global_step:" in line:
            m = _STEP.search(line)
            if m:
                r = _RANK.search(line)
                rank = r.group(1) if r else None
                if cur.rank is None:
                    cur.rank = rank
                if rank == cur.rank:  # every rank logs; keep the first rank's curve
                    cur.steps.append(int(m.group(1)))
                    cur.losses.append(float(m.group(2)))
                cur.kind = _training_kind(cur.kind)
                cur.anything = True
            return
        if " - Rank " in line or " - Process ID " in line:
            r = _RANK.search(line)
            if r:
                cur.ranks.add(r.group(1))
        if "e2e_train_time" in line:
            for key, value in _E2E.findall(line):
                cur.e2e[key] = float(value)
            cur.kind = _training_kind(cur.kind)
            cur.anything = True
            return
        if "AssertionError" in line:
            m = _ASSERT.search(line)
            if m:
                cur.assertion = (m.group(1), float(m.group(2)), float(m.group(3)))
            else:
                cur.traceback = True
            return
        if line.startswith("Traceback"):
            cur.traceback = True
            return
        if "for output" in line:
            m = POINTER.search(line)
            if m:
                cur.pointer = m.group(1)
                if m.group(1) not in self.pointers:
                    self.pointers.append(m.group(1))
                cur.anything = True
            return
        if ".pef exists" in line:
            m = _PEF_EXISTS.search(line)
            if m:
                cur.pef_exists = m.group(1)
                cur.anything = True
            return
        if "Submitted batch job" in line:
            m = _SUBMITTED.search(line)
            if m:
                cur.job = int(m.group(1))
                cur.anything = True
            return
        if "sbatch: error" in line:
            m = _SBATCH_ERROR.search(line)
            if m and cur.rejected is None:
                cur.rejected = m.group(1).strip()
                cur.anything = True
            return

    # -- closing a run -------------------------------------------------------------------
    def _close(self) -> _Run:
        cur = self.cur
        self.cur = _Run()
        if not cur.anything:
            return self.cur
        run = cur.run
        model = str(run.params.get("model", "BertLarge"))
        run.exercise = "sambanova/{}".format(_exercise_name(model))
        if cur.kind == "training":
            self._training(cur)
        elif cur.kind in ("compile", "submission") or cur.duration is not None or cur.job or cur.rejected:
            self._compile(cur)
        elif cur.pointer and not cur.kind:
            # Only a pointer (slurm-<id>.out): not a run at all.
            self.notes.append("This is Slurm's stdout file: it holds only 'Using {} for output'. {} Copy that "
                              "file from the testbed and read it instead.".format(cur.pointer, OUTPUT_NOTE))
            return self.cur
        else:
            run.notes.append("Neither a compile log nor a training log: nothing to measure was found.")
        self.runs.append(run)
        return self.cur

    def _compile(self, cur: _Run) -> None:
        run = cur.run
        run.params["log_kind"] = "compile+submit" if cur.kind != "submission" else "submission"
        if cur.compile_end is not None:
            METRICS.add(run, "compile_s", cur.compile_end)
        compiled = cur.compile_start or cur.compile_end is not None
        skipped = (not compiled and cur.kind != "submission") or cur.pef_exists is not None
        if cur.kind != "submission" or skipped:
            METRICS.add(run, "compile_skipped", bool(skipped))
        if cur.job is not None:
            run.params["job_id"] = cur.job
        if cur.duration is not None:
            METRICS.add(run, "duration_s", cur.duration)
        if cur.rejected:
            run.status = "failed"
            METRICS.add(run, "submitted", False)
            run.notes.append(REJECT_NOTE.format("; ".join(filter(None, (cur.rejected, _oversize(run.params))))))
        elif cur.job is not None:
            METRICS.add(run, "submitted", True)
            run.status = "complete" if cur.duration is not None or cur.kind == "submission" else "incomplete"
            if cur.duration is not None:
                if skipped and cur.duration <= 5:
                    run.notes.append(CACHED_NOTE.format(cur.duration))
                else:
                    run.notes.append(DURATION_NOTE.format(cur.duration, cur.job))
        elif cur.kind == "submission":
            run.status = "incomplete"
        else:
            run.notes.append("The log ends before the job was submitted: it is cut short.")
        if cur.pef_exists:
            run.notes.append("'{} exists': compilation was skipped and the cached PEF reused.".format(cur.pef_exists))
        if cur.pointer:
            run.environment["output_log"] = cur.pointer
        if _oversize(run.params):
            run.notes.append(_oversize(run.params) + ": Slurm rejects this job at submission, so no training "
                             "happens.")
        if cur.kind == "submission":
            if cur.steps:
                run.add_series("loss", cur.steps, cur.losses)
            run.notes.append("A shell session: it shows the submission{}, not the whole training; read the job's "
                             "BertLarge.out for the metrics.".format(" and {} training steps (tail -f)".format(
                                 len(cur.steps)) if cur.steps else ""))
        elif cur.job is not None:
            run.notes.append("A compile log: it holds no training metrics. " + OUTPUT_NOTE)

    def _training(self, cur: _Run) -> None:
        run = cur.run
        run.params["log_kind"] = "training"
        p = run.params
        if cur.steps:
            run.add_series("loss", cur.steps, cur.losses)
        if cur.ranks and cur.steps:  # the e2e line's process id alone is not a rank that trained
            METRICS.add(run, "ranks_seen", len(cur.ranks))
        e2e = cur.e2e
        for key in ("e2e_train_time", "training_sequences_per_second", "final_loss", "training_samples_per_second"):
            if key in e2e:  # the table's unit; the log names this one's unit wrongly, and the record says so
                note = " (logged as sequences/s)" if key == "training_sequences_per_second" else ""
                run.add_metric(key, e2e[key], METRICS.unit(key) + note)
        losses = list(cur.losses) + ([e2e["final_loss"]] if isinstance(e2e.get("final_loss"), float) else [])
        if loss_divergence(losses):
            run.status = "diverged"
            run.notes.append(divergence_note(losses, where="logged value"))
        elif "e2e_train_time" in e2e:
            run.status = "complete"
        elif cur.traceback:
            run.status = "failed"
            run.notes.append("The job failed before printing e2e_train_time.")
        else:
            run.notes.append("No e2e_train_time line: the training log is cut short (or the job is still running).")
        throughput = e2e.get("training_sequences_per_second")
        t = e2e.get("e2e_train_time")
        need = ("ntasks", "batch_size", "steps_this_run", "max_seq_length")
        if throughput and t and all(k in p for k in need):
            tokens = p["ntasks"] * p["batch_size"] * p["steps_this_run"] * p["max_seq_length"] / t
            sequences = tokens / p["max_seq_length"]
            METRICS.add(run, "sequences_per_second", round(sequences, 3))
            METRICS.add(run, "throughput_per_task", round(throughput / p["ntasks"], 1))
            if abs(tokens - throughput) <= 0.01 * throughput:
                run.notes.append(TOKENS_NOTE.format(p["ntasks"], p["batch_size"], p["steps_this_run"],
                                                    p["max_seq_length"], t, tokens, sequences))
            else:
                run.notes.append("training_sequences_per_second ({:.0f}) does not equal ntasks x batch x steps x "
                                 "max_seq_length / e2e ({:.0f}): the flags in the log may not be the ones that "
                                 "ran.".format(throughput, tokens))
            run.notes.append(FLAT_NOTE.format(p["steps_this_run"], t, throughput / p["ntasks"]))
        elif throughput:
            run.notes.append("training_sequences_per_second counts tokens per second (ntasks x batch x steps x "
                             "max_seq_length / e2e time), not sequences.")
        if cur.assertion:
            bound, limit, found = cur.assertion
            METRICS.add(run, "throughput_check", "failed (at {} {:.0f})".format(bound, limit))
            if "e2e_train_time" in e2e:
                run.notes.append(ASSERT_NOTE.format(bound, limit, found))
            if bound == "most" and p.get("nodes", 1) > 1:
                run.notes.append("This {}-node run is faster than the script's upper bound, which was set for "
                                 "one node.".format(p["nodes"]))
        if cur.duration is not None:
            METRICS.add(run, "duration_s", cur.duration)
        if not cur.steps and set(run.params) <= {"log_kind"} and cur.e2e:
            run.notes.append("Only the e2e summary line was given: ntasks, batch size, steps and whether the model "
                             "was compiled are not in it. e2e_train_time is the whole training time, not the time "
                             "per step or per sequence.")
        elif not cur.compile_start and cur.compile_end is None:
            METRICS.add(run, "compile_skipped", True)
            run.notes.append("The log starts at RUN: compilation was skipped because the compiled PEF existed.")


def _oversize(p: Dict[str, Any]) -> str:
    """The words "--ntasks N > --nodes A x --ntasks-per-node B" when the flags ask for more tasks than fit."""
    if all(k in p for k in ("ntasks", "ntasks_per_node", "nodes")) and p["ntasks"] > p["nodes"] * p["ntasks_per_node"]:
        return "--ntasks {} > --nodes {} x --ntasks-per-node {}".format(p["ntasks"], p["nodes"], p["ntasks_per_node"])
    return ""


def _training_kind(kind: Optional[str]) -> str:
    # In a shell session, training lines come from `tail -f` of the job's log: still a submission.
    return "submission" if kind == "submission" else "training"


def _exercise_name(model: str) -> str:
    lower = model.lower()
    if "bert" in lower:
        return "bert_large"
    if "gpt" in lower:
        return "gpt"
    return re.sub(r"\W+", "_", lower) or "unknown"
