"""The phase API (labkit.interrupts): real SIGINTs to this process, sent at a moment the run itself reaches
(a phase it enters, a line it prints), never after a sleep."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from labkit import interrupts
from labkit.results import Run

pytestmark = pytest.mark.timing


def _sigint():
    os.kill(os.getpid(), signal.SIGINT)


def _run(measured):
    run = Run("demo/phases", metrics={"steps": len(measured)})
    return run if measured else None


def test_an_interrupt_before_the_first_measurement_keeps_nothing_and_says_so_in_one_line():
    @interrupts.run_step
    def run_demo():
        interrupts.phase("setup")
        _sigint()
        raise AssertionError("the interrupt stops the setup at once")

    with pytest.raises(interrupts.Interrupted) as caught:
        run_demo()
    assert caught.value._render_traceback_() == ["interrupted in setup: nothing was measured yet, so no run was recorded"]


def test_after_the_first_measurement_an_interrupt_ends_the_run_at_the_next_phase_with_what_was_measured(capsys):
    done = []

    @interrupts.run_step
    def run_demo():
        measured = []
        interrupts.keep(lambda: _run(measured))
        for epoch in (1, 2, 3):
            interrupts.phase("epoch {}/3".format(epoch))
            measured.append(epoch)
            if epoch == 2:
                _sigint()  # deferred: epoch 2 is finished, epoch 3 never starts
                done.append("epoch 2 went on to its end")
        interrupts.phase("summary")
        raise AssertionError("not reached")

    run = run_demo()
    assert done == ["epoch 2 went on to its end"]
    assert (run.status, run.stopped_in, run.metrics["steps"]) == ("interrupted", "epoch 2/3", 2)
    assert run.notes == ["Interrupted in epoch 2/3: a partial run; its figures cover only what was measured before it."]
    assert capsys.readouterr().out.splitlines() == [
        "interrupted in epoch 2/3: the run is kept with what was measured before it (status interrupted)"]
    assert Run.from_dict(run.to_dict()).stopped_in == "epoch 2/3"


def test_an_interrupt_in_the_last_phase_marks_the_run_it_returns():
    @interrupts.run_step
    def run_demo():
        interrupts.keep(lambda: _run([1]))
        interrupts.phase("summary")
        _sigint()
        return Run("demo/phases")

    run = run_demo()
    assert (run.status, run.stopped_in) == ("interrupted", "summary")


def test_an_interrupt_after_the_last_line_leaves_the_run_complete():
    @interrupts.run_step
    def run_demo():
        interrupts.keep(lambda: _run([1]))
        interrupts.phase(interrupts.DONE)
        _sigint()
        return Run("demo/phases")

    run = run_demo()
    assert (run.status, run.stopped_in) == ("complete", "")


def test_a_second_interrupt_stops_at_once_and_the_run_still_keeps_what_was_measured():
    reached = []

    @interrupts.run_step
    def run_demo():
        interrupts.keep(lambda: _run([1, 2]))
        interrupts.phase("summary")
        _sigint()
        reached.append("the first one is deferred")
        _sigint()
        reached.append("not reached: the second one raised")

    run = run_demo()
    assert reached == ["the first one is deferred"]
    assert (run.status, run.stopped_in) == ("interrupted", "summary")


def test_a_training_loop_inside_the_run_shares_its_stop_request():
    @interrupts.run_step
    def run_demo():
        steps = []
        interrupts.keep(lambda: _run(steps))
        interrupts.phase("training", check=False)
        with interrupts.graceful() as stop:
            for step in range(1, 100):
                steps.append(step)
                if step == 3:
                    _sigint()
                if stop.requested:
                    break
        interrupts.phase("testing")  # the request the loop saw ends the run here
        raise AssertionError("no test pass after an interrupt")

    run = run_demo()
    assert (run.status, run.stopped_in, run.metrics["steps"]) == ("interrupted", "training", 3)


def test_the_flag_keep_returns_is_the_one_its_loops_check_and_names_their_phases():
    @interrupts.run_step
    def run_demo():
        steps = []
        stop = interrupts.keep(lambda: _run(steps))
        stop.phase("training", check=False)
        for step in range(1, 100):
            steps.append(step)
            if step == 3:
                _sigint()  # no graceful() block: once the run keeps what it measured, the loop ends at its boundary
            if stop.requested:
                break
        stop.phase("testing")
        raise AssertionError("no test pass after an interrupt")

    run = run_demo()
    assert (run.status, run.stopped_in, run.metrics["steps"]) == ("interrupted", "training", 3)
    outside = interrupts.keep(lambda: None)  # outside a run step: a flag of its own, no run to end
    assert not outside.requested
    outside.phase("anything")
    outside.check()


def test_until_the_run_begins_measuring_an_interrupt_stops_it_at_once():
    @interrupts.run_step
    def run_demo():
        started = []
        interrupts.keep(lambda: _run(started), measuring=lambda: bool(started))
        interrupts.phase("cpu inference")
        _sigint()
        raise AssertionError("not reached")

    with pytest.raises(interrupts.Interrupted, match="interrupted in cpu inference: nothing was measured yet"):
        run_demo()


def test_runs_inside_a_run_step_end_at_the_next_boundary_and_the_step_keeps_the_runs_made():
    @interrupts.with_phases
    def one_run(size):
        interrupts.phase("setup of {}".format(size))  # a boundary: after an interrupt the run ends here
        if size == 32:
            _sigint()  # deferred: the step has measured a run already
        return Run("demo/phases", params={"batch_size": size})

    @interrupts.run_step
    def compare():
        found = []
        interrupts.keep(lambda: found or None, measuring=lambda: bool(found))
        for size in (2, 32, 64):
            found.append(one_run(size))
        raise AssertionError("not reached")

    kept = compare()
    assert [run.params["batch_size"] for run in kept] == [2, 32]  # 32 had no boundary left; 64 never started


def test_a_run_inside_a_run_step_with_nothing_measured_says_so_once():
    @interrupts.with_phases
    def one_run():
        _sigint()

    @interrupts.run_step
    def step():
        one_run()

    with pytest.raises(interrupts.Interrupted) as caught:
        step()
    assert str(caught.value) == "interrupted in setup: nothing was measured yet, so no run was recorded"


def test_the_handler_is_restored_after_a_run_step_and_stays_for_a_nested_one():
    before = signal.getsignal(signal.SIGINT)
    seen = []

    @interrupts.with_phases
    def inner():
        seen.append(signal.getsignal(signal.SIGINT))

    @interrupts.run_step
    def outer():
        seen.append(signal.getsignal(signal.SIGINT))
        inner()
        seen.append(signal.getsignal(signal.SIGINT))

    outer()
    assert seen[0] is not before and seen[0] == seen[1] == seen[2]
    assert signal.getsignal(signal.SIGINT) is before


# A Ctrl-C that lands while Python runs a weakref callback (importlib's module locks have one: a
# Ctrl-C during a setup's imports): Python cannot raise there. A script of its own, because pytest
# puts its own sys.unraisablehook in place of the one labkit installs.
_IN_A_CALLBACK = textwrap.dedent("""
    import signal, time, weakref
    from labkit import interrupts

    class Thing:
        pass

    def callback(ref):
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):  # the handler runs here, inside the callback
            pass

    @interrupts.run_step
    def run_demo():
        thing = Thing()
        ref = weakref.ref(thing, callback)
        del thing
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pass
        print("the setup went on to its end")

    try:
        run_demo()
    except interrupts.Interrupted as stopped:
        print(stopped)
""")


def _python(script):
    return subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=180)


def test_a_ctrl_c_inside_a_weakref_callback_still_stops_the_setup_with_one_line_and_no_traceback():
    ended = _python(_IN_A_CALLBACK)
    assert ended.stdout.splitlines() == ["interrupted in setup: nothing was measured yet, so no run was recorded"], \
        ended.stdout + ended.stderr
    assert ended.stderr == "" and ended.returncode == 0, ended.stderr


def test_other_exceptions_python_cannot_raise_are_still_shown():
    ended = _python("import labkit.interrupts\n"
                    "class Broken:\n"
                    "    def __del__(self):\n"
                    "        raise ValueError('from a destructor')\n"
                    "Broken()\n")
    assert "Exception ignored in" in ended.stderr and "ValueError: from a destructor" in ended.stderr, ended.stderr


def test_a_complete_run_keeps_its_old_record_and_an_old_record_reads_without_a_phase():
    data = Run("demo/phases").to_dict()
    assert "stopped_in" not in data
    assert Run.from_dict(data).stopped_in == ""
    interrupted = Run("demo/phases", status="interrupted", stopped_in="testing")
    assert interrupted.partial_rows()[:2] == [("status", "interrupted: partial run"), ("stopped in", "testing")]


def test_an_interrupt_while_showing_a_run_stops_the_drawing_with_one_line_and_no_error(capsys):
    drawn = []

    @interrupts.show_step
    def show(run):
        drawn.append("table")
        _sigint()
        drawn.append("figure")

    assert show(Run("demo/phases")) is None
    assert drawn == ["table"]
    assert capsys.readouterr().out.splitlines() == [interrupts.SHOW_STOPPED]


class _InterruptedWhileNamed:
    def __set_name__(self, owner, name):
        _sigint()


def _interrupt_made_another_error(how):
    if how == "set_name":  # a class made as a module first imports (matplotlib's Axes): 3.11 wraps it
        type("Axes", (), {"get_autoscaley_on": _InterruptedWhileNamed()})
    try:
        _sigint()
    except KeyboardInterrupt as stopped:
        raise RuntimeError("the library's own error") from stopped


@pytest.mark.parametrize("how", ["set_name", "reraised"])
def test_an_interrupt_the_drawing_code_turns_into_another_error_stops_the_drawing_the_same_way(capsys, how):
    drawn = []

    @interrupts.show_step
    def show(run):
        drawn.append("table")
        _interrupt_made_another_error(how)
        drawn.append("figure")

    assert show(Run("demo/phases")) is None
    assert drawn == ["table"]
    assert capsys.readouterr().out.splitlines() == [interrupts.SHOW_STOPPED]


@pytest.mark.parametrize("how", ["set_name", "reraised"])
def test_an_interrupt_the_setup_code_turns_into_another_error_keeps_nothing_and_says_so_in_one_line(how):
    @interrupts.run_step
    def run_demo():
        interrupts.phase("setup")
        _interrupt_made_another_error(how)

    with pytest.raises(interrupts.Interrupted) as caught:
        run_demo()
    assert caught.value._render_traceback_() == ["interrupted in setup: nothing was measured yet, so no run was recorded"]


def test_a_second_interrupt_the_code_turns_into_another_error_still_keeps_what_was_measured():
    @interrupts.run_step
    def run_demo():
        measured = []
        interrupts.keep(lambda: _run(measured))
        interrupts.phase("epoch 1/3")
        measured.append(1)
        _sigint()  # the first: deferred to the end of the epoch
        _interrupt_made_another_error("reraised")  # the second stops at once, as the library's own error

    run = run_demo()
    assert (run.status, run.stopped_in, run.metrics["steps"]) == ("interrupted", "epoch 1/3", 1)


def test_an_error_while_showing_a_run_that_no_interrupt_caused_still_fails_the_cell():
    @interrupts.show_step
    def show(run):
        try:
            raise ValueError("a broken table")
        except ValueError as broken:
            raise RuntimeError("drawing failed") from broken

    with pytest.raises(RuntimeError, match="drawing failed"):
        show(Run("demo/phases"))
