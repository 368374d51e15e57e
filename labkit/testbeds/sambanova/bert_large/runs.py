"""One run where ``target`` says (the testbed job, the portable ranks, or a log), and the
homework's runs: one more per ``sweep_ntasks`` value plus the ``compare_logs``.

    from labkit.testbeds.sambanova import bert_large
    run = bert_large.run(config)
    runs = bert_large.homework_runs(config, run)
"""

from __future__ import annotations

import os
from typing import Any, List, Optional

from labkit.interrupts import run_step
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.sambanova.bert_large.host import SambaFlow, resolve_target
from labkit.testbeds.sambanova.bert_large.portable import run_portable
from labkit.testbeds.sambanova.bert_large.testbed import read_log, run_testbed

__all__ = ["run", "homework_runs"]


@run_step
def run(config: Config, setup: SambaFlow = SambaFlow(), target: Optional[str] = None, **options: Any) -> Run:
    """Run the exercise where ``config.target`` says (see labkit.testbeds.sambanova's docstring);
    ``target`` is where :func:`resolve_target` already said it goes (None: resolve it now)."""
    target = target or resolve_target(config, setup)
    if target == "log":
        return read_log(config.log_path, config)
    if target == "testbed":
        return run_testbed(config, setup=setup, **options)
    return run_portable(config, **options)



def homework_runs(config: Config, first: Run, setup: SambaFlow = SambaFlow(), show: bool = True) -> List[Run]:
    """``first``, one more run per ``config.sweep_ntasks`` value (same target and parameters),
    and the runs in ``config.compare_logs``."""
    runs = [first]
    target = first.source
    for n in config.sweep_ntasks:
        changed = config.replace(ntasks=n, log_path=None,
                                 target="testbed" if target == "testbed" else "portable")
        runs.append(run(changed, setup=setup, show=show))
        if runs[-1].status == "interrupted":  # the student stopped it: no more runs
            break
    runs.extend(read_log(os.path.expanduser(p)) for p in config.compare_logs)
    return runs
