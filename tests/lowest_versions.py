"""pip constraints that pin packages at the lowest versions pyproject.toml declares.

    python tests/lowest_versions.py [--extra NAME]... PACKAGE...

prints ``PACKAGE==FLOOR`` for each PACKAGE, FLOOR being its highest ``>=`` bound among the
base dependencies and the extras named (pip installs one version, which must satisfy all of
them). ``make test-lowest`` installs labkit under these constraints into .venv-lowest and runs
the tests that exercise those packages, so a floor that no longer works fails there, not for a
student. A package without a ``>=`` bound there is an error: there is no floor to test.
"""

import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List, Sequence

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

_FLOOR = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(?:[,;].*)?$")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _version_key(version: str) -> List[int]:
    return [int(part) for part in re.findall(r"\d+", version)]


def _requirements(pyproject_text: str, extras: Sequence[str]) -> List[str]:
    import tomllib  # Python 3.11+: this script runs on the CI's Python, not on labkit's 3.8

    project = tomllib.loads(pyproject_text)["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [extra for extra in extras if extra not in optional]
    if unknown:
        raise SystemExit("lowest_versions.py: --extra {}: not an extra of pyproject.toml (it has {})".format(
            ", ".join(unknown), ", ".join(sorted(optional))))
    found = list(project.get("dependencies", []))
    for extra in extras:
        found.extend(optional[extra])
    return found


def floors(pyproject_text: str, extras: Sequence[str], packages: Sequence[str]) -> Dict[str, str]:
    """The highest ``>=`` bound of each of ``packages`` among the base dependencies and ``extras``."""
    best: Dict[str, str] = {}
    for requirement in _requirements(pyproject_text, extras):
        match = _FLOOR.match(requirement)
        if match:
            name, version = _normalized(match.group(1)), match.group(2)
            if name not in best or _version_key(version) > _version_key(best[name]):
                best[name] = version
    missing = [package for package in packages if _normalized(package) not in best]
    if missing:
        raise SystemExit("lowest_versions.py: {}: no '>=' floor in pyproject.toml's dependencies{} to pin".format(
            ", ".join(missing), " or extras " + ", ".join(extras) if extras else ""))
    return {package: best[_normalized(package)] for package in packages}


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extra", action="append", default=[], help="an extra of pyproject.toml (repeatable)")
    parser.add_argument("packages", nargs="+", metavar="PACKAGE")
    args = parser.parse_args(argv)
    for package, version in floors(PYPROJECT.read_text(encoding="utf-8"), args.extra, args.packages).items():
        print("{}=={}".format(package, version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
