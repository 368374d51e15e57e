import sys

from labkit.cli import main

status = main()
# Under `python -m`, CPython exits by SIGINT instead of with `status` when a Ctrl-C ever ended an
# exec() of a string (scipy, dataclasses and namedtuple build code that way as labkit's commands
# import), even one labkit caught and answered: such an exec sets a flag that Py_RunMain reads at
# exit and that only the next exec of a string clears (CPython Python/pythonrun.c,
# run_eval_code_obj; Modules/main.c, Py_RunMain). The `labkit` script is not affected.
exec("")
sys.exit(status)
