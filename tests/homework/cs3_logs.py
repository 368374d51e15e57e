"""CS-3 logs of `cszoo fit` at any batch size and rate, made from the course's real sample.

    from tests.homework.cs3_logs import cs3_log
    text = cs3_log(batch_size=2048, rate=58.4)                  # a complete 200-step run
    text = cs3_log(batch_size=4096, rate=96.1, stop_after=50)   # died after its first report

The course's sample (tests/fixtures/testbed-logs/cerebras/upstream-fall2025-llama2-7b-sample-output.log,
batch size 1024, 31.99 samples/s) is the template: every line keeps its real form, and only what a
different batch size and speed change is rewritten: the Train lines' Rate and GlobalRate, their time
stamps (50 steps x batch size / rate apart), the checkpoint and completion lines after the last step,
and the `Processed N training sample(s) in T seconds` line. The loss falls a little faster with a
larger batch (the same number of steps sees more samples). These are generated logs for tests and the
generated class, never passed off as measurements.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tests" / "fixtures" / "testbed-logs" / "cerebras" / "upstream-fall2025-llama2-7b-sample-output.log"
_STAMP = "%Y-%m-%d %H:%M:%S,%f"
_TRAIN = re.compile(r"\| Train Device=CSX, Step=(\d+), Loss=([\d.]+), Rate=[\d.]+ samples/sec, "
                    r"GlobalRate=[\d.]+ samples/sec")
STEPS = 200  # the course's max_steps
LOG_EVERY = 50


def _stamp(moment: datetime) -> str:
    return moment.strftime(_STAMP)[:-3]


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return "{}:{:02d}:{:02d}".format(seconds // 3600, seconds % 3600 // 60, seconds % 60)


def cs3_log(batch_size: int, rate: float, stop_after: Optional[int] = None, checkpoint_s: float = 464.466) -> str:
    """The sample's text for a run at ``batch_size`` with GlobalRate ``rate`` (samples/s).

    ``stop_after``: the last step reported before the job died (no checkpoint, no summary).
    """
    lines = SAMPLE.read_text().splitlines()
    begin = next(i for i, line in enumerate(lines) if "Beginning appliance run" in line)
    start = datetime.strptime(lines[begin][:23], _STAMP)
    out: List[str] = lines[:begin + 1]
    per_report = LOG_EVERY * batch_size / rate
    last = start
    scale = (batch_size / 1024.0) ** 0.08  # a larger batch: a little lower loss after the same steps
    for step in range(LOG_EVERY, STEPS + 1, LOG_EVERY):
        last = start + timedelta(seconds=per_report * step / LOG_EVERY)
        loss = 8.2 - 2.1 * (step / STEPS) ** 0.6 * scale
        left = per_report * (STEPS - step) / LOG_EVERY + 40
        out.append("{} INFO:   | Train Device=CSX, Step={}, Loss={:.5f}, Rate={:.2f} samples/sec, GlobalRate={:.2f} "
                   "samples/sec, LoopTimeRemaining={}, TimeRemaining={}".format(
                       _stamp(last), step, loss, rate, rate, _clock(left), _clock(left)))
        if stop_after is not None and step >= stop_after:
            out.append("{} ERROR:   Job wsjob-kgqvqqxnp9zvpmwulcbxuj failed: the execute job was terminated".format(
                _stamp(last + timedelta(seconds=3))))
            return "\n".join(out) + "\n"
    saved = last + timedelta(seconds=checkpoint_s)
    done = saved + timedelta(seconds=11.503)
    processed = (done - datetime.strptime(lines[0][:23], _STAMP)).total_seconds() - 24.0
    out += ["{} INFO:   Saving checkpoint at step {}".format(_stamp(last + timedelta(milliseconds=6)), STEPS),
            "{} INFO:   Saved checkpoint model_dir_llama2_7b/checkpoint_{}.mdl".format(_stamp(saved), STEPS),
            "{} INFO:   Training completed successfully!".format(_stamp(done)),
            "{} INFO:   Processed {} training sample(s) in {:.9f} seconds.".format(
                _stamp(done + timedelta(milliseconds=6)), STEPS * batch_size, processed)]
    return "\n".join(out) + "\n"


def write_cs3_log(folder: Path, batch_size: int, rate: float, stop_after: Optional[int] = None) -> Path:
    """``folder/mytest-bs<batch_size>.log`` (the course's `|& tee mytest.log`, one per batch size)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mytest-bs{}.log".format(batch_size)
    path.write_text(cs3_log(batch_size, rate, stop_after))
    return path
