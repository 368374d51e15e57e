"""The release labkit checks a modelzoo against, and the appliance's version errors in one sentence.

The two texts are cerebras_appliance 2.10's own: utils/misc.py ``version_check`` (a release mismatch) and
cluster/client.py ``assert_compatible_cluster_software`` (semantic versions too far apart).
"""

from __future__ import annotations

import yaml

from labkit.testbeds.cerebras.release import modelzoo_release, release_lines, setup_commands, version_mismatch
from labkit.testbeds.cerebras.yaml_lines import put_scalar

RELEASE_ERROR = """\
Traceback (most recent call last):
  File "cszoo", line 8, in <module>
cerebras.appliance.errors.ApplianceVersionError: CLUSTER_SERVER has version: 2.10.0 but client has 2.6.0.
In order to use this cluster, you must install 2.10.0 of the client.
"""

SEMVER_ERROR = ("cerebras.appliance.errors.ApplianceVersionError: Client software is on semantic version 1.2.0 but "
                "CLUSTER_SERVER is on semantic version 3.1.0. Client software must be no more than 10 minor versions "
                "behind and no more than 5 minor versions ahead of the CLUSTER_SERVER version for compatibility.\n")


def test_the_setup_commands_are_alcfs():
    assert setup_commands() == (
        "mkdir ~/R_2.10.0; cd ~/R_2.10.0; git clone https://github.com/Cerebras/modelzoo.git; cd modelzoo; "
        "git checkout Release_2.10.0; cd ..; python3.11 -m venv venv_cerebras_pt; "
        "source venv_cerebras_pt/bin/activate; pip install -e modelzoo")


def test_the_release_is_read_from_setup_py_without_running_it(tmp_path):
    (tmp_path / "setup.py").write_text('raise SystemExit("never run")\ndef main():\n    __version__ = "2.9.0"\n')
    assert modelzoo_release(str(tmp_path)) == "2.9.0"
    assert "is Release 2.9.0; labkit was checked against 2.10.0" in release_lines(str(tmp_path))[0]
    assert modelzoo_release(str(tmp_path / "none")) is None and release_lines(str(tmp_path / "none")) == []


def test_the_appliances_version_errors_become_one_sentence():
    said = version_mismatch("INFO: a line\n" + RELEASE_ERROR)
    assert said.startswith("The CS-3 cluster (CLUSTER_SERVER) runs release 2.10.0 and this venv's client is 2.6.0")
    assert "mkdir ~/R_2.10.0;" in said and said.count(". ") == 0 and said.endswith("and run from it.")
    said = version_mismatch(SEMVER_ERROR)
    assert said.startswith("The CS-3 cluster's CLUSTER_SERVER is on version 3.1.0 and this venv's client on 1.2.0")
    assert version_mismatch("Processed 24 training sample(s) in 15.4 seconds.\n") is None


def test_a_missing_key_is_added_under_the_deepest_mapping_the_file_has():
    text = "trainer:\n    init:  # kept\n        backend:\n            backend_type: CSX\n    fit: {}\n"
    added, had = put_scalar(text, ("trainer", "init", "backend", "cluster_config", "job_time_sec"), 3600)
    assert not had and added == ("trainer:\n    init:  # kept\n        backend:\n            cluster_config:\n"
                                 "                job_time_sec: 3600\n            backend_type: CSX\n    fit: {}\n")
    again, had = put_scalar(added, ("trainer", "init", "backend", "cluster_config", "job_time_sec"), 60)
    assert had and yaml.safe_load(again)["trainer"]["init"]["backend"]["cluster_config"]["job_time_sec"] == 60


def test_a_key_under_an_inline_value_is_refused_by_line():
    import pytest

    with pytest.raises(ValueError, match="line 3 holds a value, not a mapping to add cluster_config.job_time_sec"):
        put_scalar("trainer:\n  init:\n    backend: {backend_type: CSX}\n",
                   ("trainer", "init", "backend", "cluster_config", "job_time_sec"), 60)
