"""The course's scaling study: data-parallel training throughput over replicas and micro-batch sizes.

    table = scaling.study([1, 2], [10, 128], epochs=2, images_per_epoch=2048, device="cpu", model="small")

The images are synthetic (speed does not depend on pixel values, and no dataset has to be shared
between replicas); throughput is taken over the epochs after the first, so compilation and warm-up
are left out. docs/sweeps.md ("The scaling notebook") tells the rest: how replicas run (the IPU path
is verified only against a fake), divergence, what IPUs cannot run, the published reference.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

from labkit.divergence import loss_divergence
from labkit.params import existing_file
from labkit.results import Run
from labkit.testbeds.comparison.models import model_choice
from labkit.testbeds.comparison.replicas import measure_ipu, measure_torch
from labkit.testbeds.comparison.metrics import METRICS
from labkit.testbeds.comparison.report import duration, with_speedup

__all__ = ["study", "measure", "load_reference", "display_table", "EXAMPLE_REFERENCE",
           "PUBLISHED_REFERENCE", "PUBLISHED_PROVENANCE", "REFERENCE_COLUMNS", "allowed_replicas",
           "as_run", "resolve_device"]

#: Columns a CSV of results measured elsewhere must have (extra columns are kept).
REFERENCE_COLUMNS = ("platform", "replicas", "micro_batch", "throughput")
_REFERENCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference")
#: The default reference: the course study's published table (Mk2 IPU-POD16 and A100), with statuses.
PUBLISHED_REFERENCE = os.path.join(_REFERENCE_DIR, "scaling_pod16_a100.csv")
#: Where :data:`PUBLISHED_REFERENCE` comes from (reference/README.md beside this module says more).
PUBLISHED_PROVENANCE = ("the course's IPU-vs-GPU comparison study, as published: its representative model "
                        "(8,922,155 parameters, 4,409,808 of them frozen) trained with Keras for 3 epochs of "
                        "70,000 images, the 2nd epoch timed, on a Graphcore Mk2 IPU-POD16 and on A100 GPUs; "
                        "statuses and notes from the runs' training logs")
#: An example CSV in the same format, measured with this notebook on labkit's 2-core CI machine.
EXAMPLE_REFERENCE = os.path.join(_REFERENCE_DIR, "scaling_cpu_2core.csv")


def allowed_replicas(requested: Sequence[int], device: str) -> List[int]:
    """The replica counts this hardware can run: up to the CPU count (gloo) or GPU count (NCCL).

    On IPUs every count asked for: PopTorch finds the IPUs when it compiles, and a count it cannot
    run (not a power of 2) gets a row saying why (``replicas.ipu_obstacle``), which the plan lists."""
    if device == "ipu":
        return list(requested)
    if device == "cuda":
        import torch

        limit = torch.cuda.device_count()
    else:
        limit = os.cpu_count() or 1
    return [r for r in requested if r <= limit]


def resolve_device(device: str) -> str:
    """``device``, or for "auto": "ipu" when PopTorch sees an IPU, else "cuda" with a GPU, else "cpu"."""
    if device != "auto":
        return device
    from labkit.devices import cuda_available, module_available

    if module_available("poptorch"):
        import poptorch

        if getattr(poptorch, "ipuHardwareIsAvailable", lambda: False)():
            return "ipu"
    return "cuda" if cuda_available() else "cpu"


def measure(replicas: int, micro_batch: int, images_per_epoch: int = 2048, epochs: int = 2,
            learning_rate: float = 0.01, seed: int = 0, device: str = "cpu",
            model: str = "representative") -> Dict[str, Any]:
    """One configuration: a row with throughput (images/s, epochs after the first), losses, ``status``
    (``complete``, ``diverged`` with its throughput, ``too few images``; on IPUs ``cannot run`` or
    ``failed``) and a ``note`` saying why (docs/sweeps.md, "The scaling notebook")."""
    if epochs < 2:
        raise ValueError("epochs = {}: the throughput is taken after the first epoch, so at least 2 are "
                         "needed".format(epochs))
    if device == "ipu":
        outcome = measure_ipu(replicas, micro_batch, images_per_epoch, epochs, learning_rate, seed, model)
    else:
        outcome = measure_torch(replicas, micro_batch, images_per_epoch, epochs, learning_rate, seed,
                                use_cuda=(device == "cuda"), model=model)
    times, losses = outcome["epoch_times"], outcome["losses"]
    row: Dict[str, Any] = {"platform": "local " + device, "model": model, "replicas": replicas,
                           "micro_batch": micro_batch, "images_per_epoch": outcome["images"],
                           "first_epoch_s": times[0] if times else float("nan"),
                           "final_loss": losses[-1] if losses else float("nan"),
                           "losses": list(losses), "precision": outcome.get("precision", "fp32"),
                           "launch": outcome.get("launch", "eager"), "device_name": outcome.get("device_name", "")}
    if outcome.get("launch_error"):  # the CUDA graph the policy chose could not be captured
        row["launch_error"] = outcome["launch_error"]
    if "status" in outcome:  # an IPU could not run it (replicas.ipu_obstacle) or PopTorch failed: it says why
        row.update(status=outcome["status"], note=outcome["note"], throughput=float("nan"), epoch_s=float("nan"))
        return row
    if outcome["images"] == 0:
        row.update(status="too few images", throughput=float("nan"), epoch_s=float("nan"),
                   note="fewer images per replica than one micro-batch")
        return row
    later = times[1:]
    row.update(epoch_s=sum(later) / len(later), throughput=outcome["images"] * len(later) / sum(later))
    reason = loss_divergence(losses)
    if reason:  # measured, but not the speed of a useful training
        row.update(status="diverged", note="diverged: " + reason)
    else:
        row.update(status="complete", note="")
    sized = outcome.get("sized")
    if sized:  # a GPU: say how the epoch was sized, and in which precision it ran
        asked, took = sized
        said = "{}; epoch sized for the {}: {:,} images took {}, so a timed epoch is {:,} images (the shard " \
               "cycled) to last at least 1 s".format(_how(row), outcome.get("device_name", "GPU"), asked * micro_batch * replicas,
                                                     duration(took), outcome["images"])
        row["note"] = "; ".join(n for n in (row["note"], said) if n)
    return row


def _how(row: Dict[str, Any]) -> str:
    precision = {"bf16": "bf16 autocast", "tf32": "TF32"}.get(row["precision"], row["precision"])
    if row.get("launch_error"):
        return "{}, eager steps (the CUDA graph could not be captured: {})".format(precision, row["launch_error"])
    return "{}, {}".format(precision, "steps replayed as a CUDA graph" if row["launch"] == "cuda graph"
                           else "eager steps")


def study(replicas: Sequence[int], micro_batches: Sequence[int], images_per_epoch: int = 2048, epochs: int = 2,
          learning_rate: float = 0.01, seed: int = 0, device: str = "auto", model: str = "representative"):
    """Every (replicas, micro-batch) the hardware allows: a DataFrame, one row each."""
    import pandas as pd

    from labkit.progress import bar

    model_choice(model)  # an unknown name fails now, not in a spawned process
    device = resolve_device(device)
    usable = allowed_replicas(replicas, device)
    skipped = [r for r in replicas if r not in usable]
    if skipped:
        print("Skipping replicas {}: this machine has room for at most {} ({}).".format(
            skipped, max(usable) if usable else 0, "GPUs" if device == "cuda" else "CPU cores"))
    configs = [(r, m) for r in usable for m in micro_batches]
    rows = []
    from labkit import interrupts

    # An interrupt lets the configuration in progress finish, then ends the study with the rows so far.
    with interrupts.graceful() as stop:
        try:
            for r, m in bar(configs, desc="configurations", unit="config"):
                rows.append(measure(r, m, images_per_epoch, epochs, learning_rate, seed, device, model))
                if stop.requested and len(rows) < len(configs):
                    break
        except KeyboardInterrupt as exc:  # a second interrupt: the configuration in progress is dropped
            if not stop.interrupted_by(exc):
                raise
    frame = pd.DataFrame(rows)
    if stop.requested and len(rows) < len(configs):
        frame.attrs["interrupted"] = stop.where(step=len(rows), steps=len(configs), unit="configuration")
        print(frame.attrs["interrupted"])
    return frame


def load_reference(path: str):
    """A CSV of results measured elsewhere (the notebook's default: :data:`PUBLISHED_REFERENCE`): columns
    platform, replicas, micro_batch, throughput (images/s), optional ``status`` (``complete`` when absent;
    ``diverged`` rows keep their measured speed) and ``note``; other columns are kept."""
    import pandas as pd

    problem = existing_file(path)
    if problem:
        raise FileNotFoundError("reference_csv {}: {}".format(path, problem))
    frame = pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"])
    missing = [c for c in REFERENCE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError("reference_csv {}: missing column(s) {}; it needs {}".format(
            path, ", ".join(missing), ", ".join(REFERENCE_COLUMNS)))
    for column in ("replicas", "micro_batch"):
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = [i + 2 for i, v in enumerate(values) if not (v == v and v >= 1 and float(v).is_integer())]
        if bad:
            raise ValueError("reference_csv {}: column {} must hold whole numbers >= 1; line(s) {} do not".format(
                path, column, ", ".join(str(b) for b in bad)))
        frame[column] = values.astype(int)
    throughput = pd.to_numeric(frame["throughput"], errors="coerce")
    bad = [i + 2 for i, (raw, v) in enumerate(zip(frame["throughput"], throughput))
           if (v != v and raw == raw) or v < 0]
    if bad:
        raise ValueError("reference_csv {}: column throughput must hold images/s (a number >= 0, or empty for "
                         "a failed run); line(s) {} do not".format(path, ", ".join(str(b) for b in bad)))
    frame["throughput"] = throughput.astype(float)
    frame["status"] = frame["status"].fillna("complete") if "status" in frame.columns else "complete"
    frame["note"] = frame["note"].fillna("") if "note" in frame.columns else ""
    return frame


def display_table(frame):
    """Throughput as a pivot table (rows: platform and replicas; columns: micro-batch), 'N images/s'.

    A diverged configuration shows its speed followed by ``(diverged)``; a failed one ``failed``.
    """
    marked = frame.assign(_cell=[
        "failed" if value != value else "{:.1f} images/s{}".format(value, " (diverged)" if status == "diverged" else "")
        for value, status in zip(frame["throughput"], frame["status"])])
    pivot = marked.pivot_table(index=["platform", "replicas"], columns="micro_batch", values="_cell",
                               aggfunc="first")
    return pivot.fillna("")


def as_run(frame, params: Dict[str, Any]):
    """A labkit.results.Run of the local measurements; each configuration's losses are series too
    (``loss_r2_mb10``: 2 replicas, micro-batch 10), so a diverged run can be seen, not only counted."""
    frame = with_speedup(frame)
    complete = frame[frame["status"] == "complete"]
    measured = frame[frame["throughput"] == frame["throughput"]]
    import pandas as pd

    run = Run("comparison/ipu_vs_gpu", params=dict(params))
    for key in ("precision", "launch", "device_name", "launch_error"):  # how the local steps ran (the environment)
        if key in frame.columns and len(frame):
            run.environment[key] = ", ".join(str(v) for v in pd.unique(frame[key].dropna()))
    if frame.attrs.get("interrupted"):  # scaling.study stopped by the student: the configurations so far
        run.mark_interrupted(frame.attrs["interrupted"], "only the configurations measured before it are in the study.")
    METRICS.add(run, "best_throughput", float(complete["throughput"].max()) if len(complete) else float("nan"))
    METRICS.add(run, "configurations", int(len(frame)))
    METRICS.add(run, "diverged", int((frame["status"] == "diverged").sum()))
    for micro_batch, group in measured.groupby("micro_batch"):
        group = group.sort_values("replicas")
        run.add_series("throughput_mb{}".format(micro_batch), group["replicas"].tolist(), group["throughput"].tolist(),
                       x_label="replicas")
        run.add_series("throughput_speedup_mb{}".format(micro_batch), group["replicas"].tolist(),
                       group["speedup"].tolist(), x_label="replicas")
    for row in frame.itertuples():
        losses = list(getattr(row, "losses", None) or [])
        if losses:
            run.add_series("loss_r{}_mb{}".format(row.replicas, row.micro_batch), list(range(1, len(losses) + 1)),
                           losses)
    bad = frame[frame["status"] == "diverged"]
    if len(bad):
        run.notes.append("{} configuration(s) diverged ({}); their speed was measured, but not of a useful "
                         "training.".format(len(bad), "; ".join(
                             "{} replica(s), micro-batch {}: {}".format(r.replicas, r.micro_batch, r.note)
                             for r in bad.itertuples())))
    return run
