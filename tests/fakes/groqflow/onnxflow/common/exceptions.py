"""mlagility 3.3.1 ``onnxflow/common/exceptions.py``, the exceptions GroqFlow 4.3.1 raises.

``Error`` and its subclasses print their message and the fail whale on stderr when they are
*made* (``Error.__init__`` calls ``printing.log_error``), so a caller that catches one still
leaves that on the screen; ``StageError`` is a plain Exception that prints nothing.
"""

import onnxflow.common.printing as printing


class Error(Exception):
    def __init__(self, msg):
        # the real __init__ calls super().__init__() with no argument: str(error) is "" and
        # error.args is (); the message exists only in what was printed
        super().__init__()
        printing.log_error(msg)


class CacheError(Error):
    pass


class EnvError(Error):
    pass


class ArgError(Error):
    pass


class StageError(Exception):
    pass


class StateError(Exception):
    pass


class IntakeError(Exception):
    pass


class IOError(Error):  # noqa: A001  (the real module shadows the builtin too)
    pass


class ModelArgError(Error):
    pass


class ModelRuntimeError(Error):
    pass
