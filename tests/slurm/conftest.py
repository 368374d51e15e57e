"""The `slurm_cluster` fixture: a real single-node Slurm (Debian slurm-wlm + munge).

It is set up once per test session by ``tests.slurm_cluster.ensure_slurm`` (installed with
apt and started when missing, reused when running). Where that is impossible (not root, no
apt) the tests that use it are skipped with the reason.
"""

import pytest

from tests.slurm_cluster import SlurmInfo, SlurmUnavailable, ensure_slurm


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmInfo:
    try:
        return ensure_slurm()
    except SlurmUnavailable as exc:
        pytest.skip("no real Slurm here: {}".format(exc))
