"""A stand-in /opt/sambaflow tree whose programs write SambaFlow's real log lines.

SambaFlow cannot be installed here, so the tests of the testbed path replace its two programs
with small scripts at the same paths, speaking the same command line:

- ``apps/nlp/transformers_on_rdu/transformers_hook.py compile ... --pef-name=N --output-folder=D``
  prints compiler lines copied from a real compile log and writes ``D/N/N.pef``;
- ``transformers_hook.py run ... --steps_this_run S -b B --max_seq_length L --pef=P`` (started
  by ``srun`` once per task) refuses a missing PEF as SambaFlow does; rank 0 prints the real
  training log's per-step lines for steps 1..S, then ``final_loss`` and the
  ``{'e2e_train_time': ..., 'training_sequences_per_second': ...}`` line with this job's own
  numbers (SLURM_NTASKS x B x S x L over the time it took), other ranks print
  ``NLP app finished`` lines;
- ``bin/snfadm -l inventory`` prints a real SN30 inventory.

Every line is copied, at test time, from the real logs in ../shared/fixtures/testbed-logs/sambanova.
"""

from __future__ import annotations

import sys
from pathlib import Path

from labkit.testbeds.sambanova.bert_large import SambaFlow
from tests.shared import real_logs, require


def fixtures_dir() -> Path:
    """The real SambaNova logs; FileNotFoundError naming LABKIT_SHARED when they are missing."""
    return require(real_logs("sambanova"))


COMPILE_LOG = "tstabrawa-fall2024-HW7-BertLarge-16tasks-1stlog.log"
TRAINING_LOG = "tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log"

HOOK = r'''#!{python}
"""Fake SambaFlow transformers_hook.py for labkit's tests: real log lines, no RDU."""
import os, re, sys, time
FIXTURES = {fixtures!r}

def flag(name):
    for i, arg in enumerate(sys.argv):
        if arg == name:
            return sys.argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    raise SystemExit("transformers_hook.py: missing " + name)

def lines(name):
    with open(os.path.join(FIXTURES, name), errors="replace") as f:
        return f.read().splitlines()

mode = sys.argv[1]
if mode == "compile":
    log = lines({compile_log!r})
    start = next(i for i, l in enumerate(log) if l.startswith("COMPILE COMMAND"))
    end = next(i for i, l in enumerate(log) if l.startswith("COMPILE END AT"))
    print("\n".join(log[start + 1:min(end, start + 40)]))
    name, folder = flag("--pef-name"), flag("--output-folder")
    os.makedirs(os.path.join(folder, name), exist_ok=True)
    with open(os.path.join(folder, name, name + ".pef"), "w") as f:
        f.write("fake PEF for " + " ".join(sys.argv[1:]) + "\n")
elif mode == "run":
    pef = flag("--pef")
    if not os.path.exists(pef):
        raise SystemExit("PEF file " + pef + " does not exist")
    steps, batch, length = int(flag("--steps_this_run")), int(flag("-b")), int(flag("--max_seq_length"))
    rank, ntasks = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    log = lines({training_log!r})
    if rank == 0:
        start = time.time()
        step_lines = [l for l in log if re.search(r"global_step:\d+\|", l)][:steps]
        for line in step_lines:
            print(line, flush=True)
            time.sleep(0.05)
        e2e = time.time() - start
        loss = float(re.search(r"step_loss:([\d.]+)", step_lines[-1]).group(1))
        final = next(l for l in log if " - info     - final_loss " in l)
        print(re.sub(r"final_loss \S+", "final_loss {{:.6f}}".format(loss), final))
        e2e_line = next(l for l in log if "'e2e_train_time'" in l)
        values = {{"e2e_train_time": e2e, "training_sequences_per_second": ntasks * batch * steps * length / e2e,
                  "final_loss": loss}}
        print(e2e_line[:e2e_line.index("{{")] + repr(values), flush=True)
    finished = [l for l in log if "NLP app finished" in l][0]
    print(re.sub(r"Rank \d+", "Rank {{}}".format(rank), finished), flush=True)
else:
    raise SystemExit("transformers_hook.py: unknown mode " + mode)
'''

SNFADM = r'''#!/bin/bash
# Fake snfadm for labkit's tests: prints a real SN30 inventory.
sed -n '/^Platform:/,/^\/NODE\/HOST\/HIC_3/p' {log}
'''


def make_fake_sambaflow(root: Path) -> SambaFlow:
    """Build the stand-in tree under ``root`` and return the :class:`SambaFlow` that points at it."""
    fixtures = fixtures_dir()
    setup = SambaFlow(root=str(root), python=sys.executable, data_dir=str(root / "data"))
    hook = Path(setup.hook)
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(HOOK.format(python=sys.executable, fixtures=str(fixtures), compile_log=COMPILE_LOG,
                                training_log=TRAINING_LOG))
    snfadm = Path(setup.snfadm)
    snfadm.parent.mkdir(parents=True, exist_ok=True)
    snfadm.write_text(SNFADM.format(log=fixtures / COMPILE_LOG))
    for program in (hook, snfadm):
        program.chmod(0o755)
    return setup
