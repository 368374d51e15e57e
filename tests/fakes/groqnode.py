"""A stand-in GroqNode for the fake GroqFlow: what ``groqflow.common.sdk_helpers`` looks at.

GroqFlow 4.3.1 decides from three things whether it can build and run: ``lspci -n`` (one line
with Groq's id ``1de0:0000`` per GroqCard), ``/etc/os-release`` (NAME must be Ubuntu or Rocky
Linux) and ``apt-cache policy groq-devtools`` / ``groq-runtime`` (an ``Installed:`` version of at
least 0.9.2.1). ``groq_node(root, cards)`` writes an ``lspci`` and an ``apt-cache`` that answer as
on a GroqNode with ``cards`` GroqCards and the SDK 0.9.3 installed, and an Ubuntu 22.04
os-release; it returns the environment that puts them in front of the fake (``PATH`` first, and
``FAKE_GROQFLOW_OS_RELEASE``, which the fake reads instead of /etc/os-release).

Two SDK tools GroqFlow runs are stood in for too: ``onnxmodelanalyzer -u -i MODEL.onnx`` (the op
check of ``groqflow/common/onnx_helpers.py``, ``check_ops``: it reads the list of the model's ops
and of the unsupported ones from the 4th and 2nd lines from the end of the tool's output), which
lists the ONNX file's op types and calls unsupported those named by ``unsupported_ops`` (the
compiler's real list is not public; by default every op is supported, as the GroqChip compiles the
BERT models of Groq's proof points), and ``groqmodel_execute_exe`` (run by
``GroqModel._execute_locally``), which succeeds, or fails as a chip fault does after
``chip_fault(root, message)``: ``message`` on its stderr and exit status 1.

``no_lspci(root)`` gives the environment of a machine without lspci (an empty PATH entry first
is not enough: the fake, like GroqFlow, also tries /usr/bin/lspci, so that fallback is pointed at
a file that does not exist).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Dict, Sequence

#: ``lspci -n`` lines of a host's own devices, then one per GroqCard (the format of pciutils' -n).
HOST_DEVICES = "00:00.0 0600: 8086:2020 (rev 04)\n00:1f.0 0601: 8086:a1c8 (rev 09)\n"
GROQCARD = "{:02x}:00.0 1200: 1de0:0000 (rev 01)\n"

OS_RELEASE = ('PRETTY_NAME="Ubuntu 22.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
              'VERSION="22.04.3 LTS (Jammy Jellyfish)"\nID=ubuntu\n')

APT_CACHE = """#!/bin/sh
# apt-cache policy PACKAGE, as on a GroqNode with the GroqWare SDK 0.9.3 installed
case "$2" in
  groq-devtools|groq-runtime)
    printf '%s:\\n  Installed: 0.9.3.1\\n  Candidate: 0.9.3.1\\n  Version table:\\n *** 0.9.3.1 500\\n' "$2";;
esac
"""


ANALYZER = """#!{python}
# onnxmodelanalyzer -u -i MODEL.onnx: the model's op types, then those the compiler does not support
import sys
import onnx
ops = sorted({{node.op_type for node in onnx.load(sys.argv[sys.argv.index("-i") + 1]).graph.node}})
with open({unsupported!r}, encoding="utf-8") as f:
    refused = f.read().split()
print("Ops in the model:")
print(ops)
print("Unsupported ops:")
print([op for op in ops if op in refused])
"""

EXECUTE = """#!/bin/sh
# groqmodel_execute_exe NUM_CHIPS OUTPUT_DIR OUTPUTS_FILE LATENCY_FILE TOPOLOGY REPETITIONS
if [ -f '{fault}' ]; then cat '{fault}' >&2; exit 1; fi
"""


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def lspci_text(cards: int) -> str:
    """What ``lspci -n`` prints on a host with ``cards`` GroqCards."""
    return HOST_DEVICES + "".join(GROQCARD.format(0x3b + i) for i in range(cards))


def groq_node(root: Path, cards: int = 1, unsupported_ops: Sequence[str] = ()) -> Dict[str, str]:
    """Write the node's lspci, apt-cache, SDK tools and os-release under ``root``; the environment to
    use them. ``unsupported_ops``: ONNX op types the node's compiler refuses."""
    bin_dir = root / "groqnode-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (root / "groqnode-lspci.txt").write_text(lspci_text(cards))
    _script(bin_dir / "lspci", "#!/bin/sh\ncat '{}'\n".format(root / "groqnode-lspci.txt"))
    _script(bin_dir / "apt-cache", APT_CACHE)
    (root / "groqnode-unsupported-ops.txt").write_text("\n".join(unsupported_ops) + "\n")
    _script(bin_dir / "onnxmodelanalyzer", ANALYZER.format(python=sys.executable,
                                                           unsupported=str(root / "groqnode-unsupported-ops.txt")))
    _script(bin_dir / "groqmodel_execute_exe", EXECUTE.format(fault=root / "groqnode-chip-fault.txt"))
    (root / "groqnode-os-release").write_text(OS_RELEASE)
    return {"PATH": str(bin_dir) + os.pathsep + os.environ.get("PATH", ""),
            "FAKE_GROQFLOW_OS_RELEASE": str(root / "groqnode-os-release")}


def set_cards(root: Path, cards: int) -> None:
    """Change how many GroqCards the node's lspci lists."""
    (root / "groqnode-lspci.txt").write_text(lspci_text(cards))


def set_unsupported_ops(root: Path, ops: Sequence[str]) -> None:
    """Change which ONNX op types the node's compiler refuses."""
    (root / "groqnode-unsupported-ops.txt").write_text("\n".join(ops) + "\n")


def chip_fault(root: Path, message: str) -> None:
    """Make every run on the node's chips fail, printing ``message`` on stderr (what the runtime says)."""
    (root / "groqnode-chip-fault.txt").write_text(message + "\n")


def no_lspci(root: Path) -> Dict[str, str]:
    """The environment of a machine where GroqFlow finds no lspci (PATH holds only an empty folder)."""
    empty = root / "empty-bin"
    empty.mkdir(parents=True, exist_ok=True)
    return {"PATH": str(empty), "FAKE_GROQFLOW_LSPCI_FALLBACK": str(root / "no-such-lspci")}
