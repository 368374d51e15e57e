"""Stopping a run (Kernel -> Interrupt, the stop button, Ctrl-C) is a result, not a crash.

An exercise's run step is a :func:`run_step`; it names its phases (setup, each epoch, testing,
summary) and calls :func:`keep` just before it starts measuring; its loops check the stop flag
``keep`` returns at their boundaries:

    @interrupts.run_step
    def run_exercise(config):
        data = load(config)                          # phase "setup"
        stop = interrupts.keep(lambda: partial_run(history))
        for epoch in range(config.epochs):
            stop.phase("epoch {}/{}".format(epoch + 1, config.epochs), check=False)
            with interrupts.graceful():
                for batch in data:
                    if stop.requested:
                        break
                    ...
        stop.phase("testing")                        # after an interrupt the run ends here, kept

The contract: where a Ctrl-C lands, what is kept and what runs next ("kept": the run step returns
what ``keep``'s builder makes of what was measured, status ``interrupted``, ``stopped_in`` the phase,
and the cells after it show and record it).

=============================== ========================================== ==========================================
Where the Ctrl-C lands          First Ctrl-C                               Second Ctrl-C
=============================== ========================================== ==========================================
before the first measurement    the run step stops at once with one line   (none: the first one stopped it)
(before ``keep``)               (:data:`NOTHING_MEASURED`); nothing is
                                recorded; Run All stops at that cell
in a training loop              the loop ends at its next step; kept       the step in progress is dropped; kept
between phases                  the run ends as the next phase starts;     the run ends at once; kept
                                kept, one line (:data:`KEPT`)
in testing                      the run ends at the next test batch; kept  the run ends at once; kept
in the summary (the last phase) the run completes and is marked            as the first
                                interrupted in the summary
after the run's last line       set aside: the run is complete             set aside
(:data:`DONE`), while the step
returns, while IPython stores
the result
in a show step                  the drawing stops with one line            as the first
                                (:data:`SHOW_STOPPED`); the run is
                                unchanged and the next cell records it
while recording (``record``)    set aside: the record is written           set aside
between cells under labkit run  the kernel holds an unrecorded run: the    the kernel is interrupted again, no cell
                                cells go on only to record it (run steps   starts; a cell not ended within
                                start nothing, show steps draw nothing),   ``CtrlC.STOP_GRACE_S`` is given up and the
                                then stop; else no further cell starts     kernel killed; later Ctrl-Cs are ignored
a cell after the run step,      that cell keeps its error; then as         as above
under labkit run                between cells
in ipykernel's own code or      as between cells; a cell whose reply was   as above
between two of its messages     lost is asked for: it ran, or runs again
(under labkit run)              unless the Ctrl-C stops the notebook
=============================== ========================================== ==========================================

Outside a run step, :func:`graceful` alone turns the first interrupt into ``stop.requested``. The
kernel side is :mod:`labkit.interrupts.kernel` (phases, run and show steps) and
:mod:`labkit.interrupts.cell` (SIGINT handlers in a cell); `labkit run`'s side is
:mod:`labkit.interrupts.runner`.
"""

from labkit.interrupts.cell import deferred, quiet_to_cell_end
from labkit.interrupts.kernel import (DONE, KEPT, NOTHING_MEASURED, SHOW_STOPPED, Interrupted, RunPhases, StopRequest,
                                      check, current_phase, graceful, keep, phase, run_step, show_step, where,
                                      with_phases)

__all__ = ["graceful", "StopRequest", "Interrupted", "run_step", "with_phases", "show_step", "SHOW_STOPPED", "where",
           "phase", "keep", "check", "current_phase", "RunPhases", "NOTHING_MEASURED", "KEPT", "DONE",
           "deferred", "quiet_to_cell_end"]
