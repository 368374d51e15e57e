"""Stopping a run (Kernel -> Interrupt, the stop button, Ctrl-C) is a result, not a crash.

A run step is a :func:`run_step` that names its phases (setup, each epoch, testing, summary) and
calls :func:`keep` just before it measures; its loops check the stop flag ``keep`` returns:

    @interrupts.run_step
    def run_exercise(config):
        data = load(config)                                  # phase "setup"
        stop = interrupts.keep(lambda: partial_run(history))
        stop.phase("epoch 1/2", check=False)
        for batch in data:                                   # once keep() is called, a first interrupt
            if stop.requested:                               # only sets the flag: the loop ends here
                break
        stop.phase("testing")                                # after an interrupt the run ends here

The contract ("kept": the step returns what ``keep``'s builder makes of what was measured, status
``interrupted``, ``stopped_in`` the phase; the cells after it show and record it; under labkit run
a second Ctrl-C anywhere also starts no further cell):

================================ ========================================= ================================
Where a Ctrl-C lands             First                                     Second
================================ ========================================= ================================
before the first measurement     stops the step at once, one line          (none)
                                 (:data:`NOTHING_MEASURED`), no record;
                                 Run All and labkit run stop there
in a training loop               the loop ends at its next step; kept      the step in progress is dropped;
                                                                           kept
between phases                   ends as the next phase starts; kept, one  ends at once; kept
                                 line (:data:`KEPT`)
in testing                       ends at the next test batch; kept         ends at once; kept
in the summary (last phase)      the run completes, marked interrupted     ends at once; kept
after the run's last line        set aside (the work is done)              set aside
(:data:`DONE`), as the step
returns, as IPython ends the cell
in a show step                   the drawing stops, one line               as the first
                                 (:data:`SHOW_STOPPED`); the next cell
                                 records the run
while recording (``record``)     set aside: the record is written          set aside
between cells under labkit run   a run not yet recorded: the cells go on   no further cell starts; a cell
                                 only to record it (run steps start        not ended within STOP_GRACE_S
                                 nothing, show steps draw nothing); else   is given up and the kernel
                                 no further cell starts                    killed; a third is ignored
a cell after the run step        that cell keeps its error; then as        as above
(labkit run)                     between cells
ipykernel's own code, between    noted by the kernel, then as between      as above
its messages (labkit run)        cells; a lost reply is asked for: the
                                 cell ran, or runs again
================================ ========================================= ================================

:func:`graceful` outside a run step turns the first interrupt into ``stop.requested``. Modules: the
kernel side, :mod:`~labkit.interrupts.kernel` (steps and phases) and :mod:`~labkit.interrupts.cell`
(handlers in a cell, answers to labkit run); labkit run's side, :mod:`~labkit.interrupts.runner`, which
asks through :mod:`labkit.execute`.
"""

from labkit.interrupts.cell import deferred, quiet_to_cell_end
from labkit.interrupts.kernel import (DONE, KEPT, NOTHING_MEASURED, SHOW_STOPPED, Interrupted, RunPhases, StopRequest,
                                      check, current_phase, graceful, keep, phase, run_step, show_step, where,
                                      with_phases)

__all__ = ["graceful", "StopRequest", "Interrupted", "run_step", "with_phases", "show_step", "SHOW_STOPPED", "where",
           "phase", "keep", "check", "current_phase", "RunPhases", "NOTHING_MEASURED", "KEPT", "DONE",
           "deferred", "quiet_to_cell_end"]
