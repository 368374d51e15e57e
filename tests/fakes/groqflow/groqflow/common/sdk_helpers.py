"""GroqFlow 4.3.1 ``groqflow/common/sdk_helpers.py``: the chip count and the SDK check, as written there.

- ``get_num_chips_available(pci_devices=None)``: ``lspci`` from PATH, else ``/usr/bin/lspci``,
  else ``EnvError("lspci not found")``; with no list given it runs ``lspci -n`` and counts the
  lines holding Groq's id ``1de0:0000`` (one chip per card).
- ``check_dependencies(require_devtools, require_runtime, exception_type)``: nothing when
  ``GROQFLOW_SKIP_SDK_CHECK=True``; else ``validate_os_version()`` reads the os-release file and
  raises ``EnvError`` (whatever ``exception_type`` says) unless NAME is "Ubuntu" or "Rocky Linux";
  then ``apt-cache policy groq-devtools`` / ``groq-runtime`` (Ubuntu) or ``dnf info`` (Rocky):
  a package that is absent or older than 0.9.2.1 raises ``exception_type`` with the real message.

Only two paths differ from the real file, so that a test can stand for a machine: the os-release
file (``FAKE_GROQFLOW_OS_RELEASE``, else ``/etc/os-release``) and the lspci fallback
(``FAKE_GROQFLOW_LSPCI_FALLBACK``, else ``/usr/bin/lspci``). ``lspci`` and ``apt-cache`` are whatever
PATH finds (tests/fakes/groqnode.py writes a GroqNode's).
"""

import enum
import os
import shutil
import subprocess

import onnxflow.common.exceptions as exp

MIN_RELEASE_VERSION = "0.9.2.1"


class OS(enum.Enum):
    UBUNTU = "Ubuntu"
    ROCKY = "Rocky Linux"


def get_num_chips_available(pci_devices=None):
    fallback = os.environ.get("FAKE_GROQFLOW_LSPCI_FALLBACK", "/usr/bin/lspci")
    if shutil.which("lspci"):
        lspci = shutil.which("lspci")
    elif os.path.isfile(fallback):
        lspci = fallback
    else:
        raise exp.EnvError("lspci not found")
    if pci_devices is None:
        pci_devices = subprocess.check_output([lspci, "-n"], stderr=subprocess.DEVNULL).decode("utf-8").split("\n")
    groq_card_id = "1de0:0000"
    chips_per_card = 1
    return sum(1 for device in pci_devices if groq_card_id in device) * chips_per_card


def find_tool(tool, soft_fail=False):
    if shutil.which(tool):
        return [tool]
    if os.path.isfile("/usr/local/groq/bin/{}".format(tool)):
        return ["/usr/local/groq/bin/{}".format(tool)]
    if soft_fail:
        return False
    raise exp.StageError("{} not found".format(tool))


def _installed_package_version(package, os_version):
    if os_version == OS.UBUNTU:
        try:
            info = subprocess.check_output(["apt-cache", "policy", package],
                                           stderr=subprocess.DEVNULL).decode("utf-8").split("\n")
        except (FileNotFoundError, subprocess.CalledProcessError) as e:
            raise exp.Error("apt-cache policy command failed") from e
        if len(info) == 1:
            return False
        return info[1].split(":")[1].replace(" ", "")
    try:
        info = subprocess.check_output(["dnf", "info", package], stderr=subprocess.DEVNULL).decode("utf-8").split("\n")
    except FileNotFoundError as e:
        raise exp.Error("dnf info command failed") from e
    except subprocess.CalledProcessError:
        return False
    return info[3].split(":")[1].replace(" ", "")


def _less_than(version_a, version_b):
    # the real file takes parse_version from pkg_resources, which is packaging's parse
    from packaging.version import parse as parse_version

    return parse_version(version_a.split("~")[0]) < parse_version(version_b.split("~")[0])


def version_is_valid(sdkv, required, requirement_name, exception_type=exp.EnvError, hint=""):
    msg = "{}>={} is a required dependency for this part of GroqFlow".format(requirement_name, MIN_RELEASE_VERSION)
    if not sdkv and required:
        raise exception_type(msg + ". However, {} was not found. ".format(requirement_name) + hint)
    if _less_than(sdkv, MIN_RELEASE_VERSION) and required:
        raise exception_type(msg + " ({} is installed). ".format(sdkv) + hint)


def validate_os_version():
    supported = [x.value for x in OS]
    unsupported_os_msg = ("Your OS must be one of the following Linux distributions: {}. Please refer to our "
                          "installation guide for more details on supported versions.".format(", ".join(supported)))
    path = os.environ.get("FAKE_GROQFLOW_OS_RELEASE", "/etc/os-release")
    if not os.path.isfile(path):
        raise exp.EnvError(unsupported_os_msg)
    os_release = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            k, v = line.rstrip().split("=")  # the real parser: a blank line or a second "=" raises ValueError
            os_release[k] = v.replace('"', "")
    if os_release["NAME"] not in supported:
        raise exp.EnvError(unsupported_os_msg)
    return OS(os_release["NAME"])


def _validate(package, os_version, required, exception_type):
    version = _installed_package_version(package, os_version)
    hint = "Please contact sales@groq.com to get access to {}.".format(package)
    version_is_valid(version, required, package, exception_type, hint)


def check_dependencies(require_devtools=False, require_runtime=False, exception_type=exp.EnvError):
    if os.environ.get("GROQFLOW_SKIP_SDK_CHECK") == "True":
        return True
    os_version = validate_os_version()
    if require_devtools:
        _validate("groq-devtools", os_version, require_devtools, exception_type)
    if require_runtime:
        _validate("groq-runtime", os_version, require_runtime, exception_type)
    # the real function ends here: it returns None after a passed check (GroqModel then checks
    # again at every execution), True only when the check is skipped
