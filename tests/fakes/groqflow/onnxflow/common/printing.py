"""mlagility 3.3.1 ``onnxflow/common/printing.py``: ``log_error`` (``clean_print`` then the "fail
whale"), ``log_warning``, ``log_info``, ``log_success``, without the terminal colours."""

import os
import re
import sys

FAIL_WHALE = ("\n▄██████████████▄▐█▄▄▄▄█▌\n██████▌▄▌▄▐▐▌███▌▀▀██▀▀\n████▄█▌▄▌▄▐▐▌▀███▄▄█▌\n"
              "▄▄▄▄▄██████████████\n\n")


def clean_print(kind, msg, file=None):
    # clean_print(): the home directory as ~, every line's leading blanks removed, leading
    # empty lines dropped, continuation lines indented under the "Error:" tag.
    home = os.path.expanduser("~")
    msg = re.sub(r"((?<=[\*\s])" + home + r")|(^" + home + r")", "~", msg)
    lines = [line.lstrip() for line in msg.split("\n")]
    while lines[0] == "" and len(lines) > 1:
        lines.pop(0)
    indentation = len(kind) + 1
    out = file or sys.stdout
    print("\n" + kind + " ", end="", file=out)
    print(("\n" + " " * indentation).join(lines).replace("**", ""), file=out, flush=True)


def log_error(msg):
    # Errors go to stderr (logn(..., is_error=True)), so a stage's stdout log does not catch them.
    clean_print("Error:", str(msg), file=sys.stderr)
    print(FAIL_WHALE, file=sys.stderr, flush=True)


def log_warning(msg):
    clean_print("Warning:", msg)


def log_info(msg):
    clean_print("Info:", msg)


def log_success(msg):
    clean_print("Woohoo!", msg)
