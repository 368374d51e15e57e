"""No test helper shadows an installed package.

pytest puts each folder of test files that has no ``__init__.py`` on ``sys.path`` (its default
"prepend" import mode), so a helper module there named like an installed top-level package is what
``import <name>`` finds for the whole run, labkit's own imports included: transformers imports
Hugging Face's ``kernels`` whenever it is installed, and once found tests/golden's helper instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(sys.version_info < (3, 10), reason="importlib.metadata.packages_distributions is 3.10+")
def test_no_module_beside_tests_that_pytest_puts_on_sys_path_is_named_like_an_installed_package():
    from importlib.metadata import packages_distributions

    installed = set(packages_distributions())
    on_path = {path.parent for pattern in ("test_*.py", "conftest.py") for path in (ROOT / "tests").rglob(pattern)
               if not (path.parent / "__init__.py").exists()}
    assert on_path, "no test folder without __init__.py: the check would check nothing"
    clashes = sorted(str(module.relative_to(ROOT)) for folder in on_path for module in folder.glob("*.py")
                     if module.stem in installed and module.stem != "conftest")
    assert not clashes, "named like an installed package, and so shadowing it: {}".format(clashes)
