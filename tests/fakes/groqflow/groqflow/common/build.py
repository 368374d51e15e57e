"""GroqFlow 4.3.1 ``groqflow/common/build.py``: the cache directory, the chip topologies and
``calculate_num_chips`` (one chip per 50M parameters, rounded up to a power of 2), as written there."""

import math
import os

environment_variables = {"cache_dir": "GROQFLOW_CACHE_DIR", "rebuild": "GROQIT_REBUILD_POLICY"}

DEFAULT_CACHE_DIR = os.environ.get("GROQFLOW_CACHE_DIR") or os.path.expanduser("~/.cache/groqflow")

GROQCARD_A14 = "A1.4"
DRAGONFLY = "Dragonfly"
ROTATIONAL = "Rotational"
TOPOLOGY = DRAGONFLY


def supported_topology(groqcard, topology):
    """Number of chips -> topology name (``supported_topology``); only A1.4 cards exist."""
    if groqcard != GROQCARD_A14:
        return {}
    if topology == DRAGONFLY:
        return {n: "DF_A14_{}_CHIP".format(n) for n in (2, 4, 8, 16, 32, 64)}
    if topology == ROTATIONAL:
        return {n: "RT09_A14_{}_CHIP".format(n) for n in (16, 32, 40, 48, 56, 64, 72)}
    return {}


def max_chips(groqcard, topology):
    chips = list(supported_topology(groqcard, topology).keys())
    if not chips:
        raise ValueError("Could not find the number of chips for groqcard {}, topology {}.".format(groqcard, topology))
    return chips[-1]


def calculate_num_chips(num_parameters, estimate=False):
    """Each chip holds about 50M parameters; the count is rounded up to a power of 2."""
    if num_parameters is None:
        return None
    if num_parameters == 0:
        return 1
    x = math.ceil(num_parameters / 50000000)
    return x if estimate else 2 ** (x - 1).bit_length()
