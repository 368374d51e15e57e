"""The Cerebras release: the one labkit's CS-3 path was checked against, the one a modelzoo checkout
is, ALCF's commands to set it up, and the appliance's version check said in one sentence.

ALCF's user guide (argonne-lcf/user-guides, docs/ai-testbed/cerebras/customizing-environment.md)
sets up Release 2.10.0: ``mkdir ~/R_2.10.0``, clone the modelzoo, ``git checkout Release_2.10.0``,
``python3.11 -m venv venv_cerebras_pt``, ``pip install -e modelzoo``. The appliance compares the
client's release with the cluster's (cerebras_appliance 2.10, utils/misc.py ``version_check`` and
cluster/client.py ``assert_compatible_cluster_software``, both raising ``ApplianceVersionError``), so a
venv of another release fails against the cluster.
"""

from __future__ import annotations

import os
import re
from typing import List, Optional

__all__ = ["CHECKED_RELEASE", "setup_commands", "modelzoo_release", "release_lines", "version_mismatch"]

#: The modelzoo release labkit's CS-3 path and its fakes follow (ALCF's documented release in 2026).
CHECKED_RELEASE = "2.10.0"

_SETUP_VERSION = re.compile(r"""^\s*__version__\s*=\s*["']([^"']+)["']""", re.M)
# utils/misc.py version_check: "{component} has version: {server} but client has {client}.\nIn order to ..."
_RELEASE_MISMATCH = re.compile(r"ApplianceVersionError: (?P<component>\S+) has version: (?P<server>\S+) but client "
                               r"has (?P<client>\S+?)\.?$", re.M)
# cluster/client.py assert_compatible_cluster_software: "Client software is on semantic version {client} but
# {component} is on semantic version {server}. Client software must be no more than ..."
_SEMVER_MISMATCH = re.compile(r"ApplianceVersionError: Client software is on semantic version (?P<client>\S+) but "
                              r"(?P<component>\S+) is on semantic version (?P<server>\S+?)\.(?:\s|$)", re.M)


def setup_commands(release: str = CHECKED_RELEASE) -> str:
    """ALCF's commands for a modelzoo checkout and its venv at ``release``, as one line to type."""
    return ("mkdir ~/R_{r}; cd ~/R_{r}; git clone https://github.com/Cerebras/modelzoo.git; cd modelzoo; "
            "git checkout Release_{r}; cd ..; python3.11 -m venv venv_cerebras_pt; "
            "source venv_cerebras_pt/bin/activate; pip install -e modelzoo".format(r=release))


def modelzoo_release(root: Optional[str]) -> Optional[str]:
    """The release of the modelzoo checkout at ``root``, from its setup.py's ``__version__`` (read, never run);
    None when the checkout has none (before 2.0)."""
    if not root:
        return None
    try:
        with open(os.path.join(root, "setup.py")) as f:
            found = _SETUP_VERSION.search(f.read())
    except OSError:
        return None
    return found.group(1) if found else None


def release_lines(root: Optional[str]) -> List[str]:
    """A plan's "Release:" line when the checkout at ``root`` is not the release labkit was checked against."""
    release = modelzoo_release(root)
    if release is None or release == CHECKED_RELEASE:
        return []
    return ["Release: the modelzoo in {} is Release {}; labkit was checked against {} (ALCF's CS-3 release since "
            "June 2026), and the cluster refuses a client of another release. To use {}: {}".format(
                root, release, CHECKED_RELEASE, CHECKED_RELEASE, setup_commands())]


def version_mismatch(log_text: str) -> Optional[str]:
    """The appliance's ``ApplianceVersionError`` in a log, as one sentence with what to do; None without one."""
    found = _RELEASE_MISMATCH.search(log_text)
    if found:
        return ("The CS-3 cluster ({}) runs release {} and this venv's client is {}, so the appliance refused the "
                "job: make a venv of release {} ({}) and run from it.".format(
                    found.group("component"), found.group("server"), found.group("client"),
                    found.group("server"), setup_commands(found.group("server"))))
    found = _SEMVER_MISMATCH.search(log_text)
    if found:
        return ("The CS-3 cluster's {} is on version {} and this venv's client on {}, too far apart, so the appliance "
                "refused the job: make a venv of the release ALCF documents ({}) and run from it.".format(
                    found.group("component"), found.group("server"), found.group("client"), setup_commands()))
    return None
