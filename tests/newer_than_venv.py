"""Whether a folder that pip installed into (``--target``) holds any release the venv does not.

    python tests/newer_than_venv.py FOLDER

prints each distribution in FOLDER whose version differs from the one this Python's environment
has (or that it lacks) and exits 0 when there is one, 3 when FOLDER holds exactly the venv's
releases. ``make test-prerelease`` installs the Jupyter stack's newest releases, pre-releases
included, into a folder and runs the execution and interrupt tests with it ahead of the venv: when
nothing in it differs from the venv, those tests would import the very files ``make test`` just ran
them on, so it says so instead of running them twice.
"""

import re
import sys
from importlib import metadata
from typing import Dict, Iterable, List

SAME = 3


def _versions(distributions: Iterable[metadata.Distribution]) -> Dict[str, str]:
    return {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version for d in distributions}


def differences(found: Dict[str, str]) -> List[str]:
    """``name: venv-version -> folder-version`` for each of ``found`` (name -> version) that the venv
    lacks or has at another version."""
    installed = _versions(metadata.distributions())
    return ["{}: {} -> {}".format(name, installed.get(name, "not installed"), version)
            for name, version in sorted(found.items()) if installed.get(name) != version]


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        raise SystemExit("usage: python tests/newer_than_venv.py FOLDER")
    found = _versions(metadata.distributions(path=[argv[0]]))
    if not found:
        raise SystemExit("newer_than_venv.py: {}: no installed distribution there (did pip install into it?)".format(argv[0]))
    changed = differences(found)
    for line in changed:
        print(line)
    return 0 if changed else SAME


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
