"""Where the tests find the real MNIST: ``$LABKIT_DATA_DIR`` first (a lent GPU machine has a copy there and
no ../shared), else the shared folder's; a missing folder's message names the variable that chose it."""

from pathlib import Path

from tests import shared


def test_mnist_is_labkit_data_dir_where_there_is_no_shared_folder(tmp_path, monkeypatch):
    copy = tmp_path / ".mnist"
    copy.mkdir()
    monkeypatch.setenv("LABKIT_SHARED", str(tmp_path / "no-shared-here"))
    monkeypatch.setenv("LABKIT_DATA_DIR", str(copy))
    assert shared.mnist_folder() == copy
    assert not shared.real_mnist().exists()


def test_without_labkit_data_dir_mnist_is_the_shared_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_SHARED", str(tmp_path))
    monkeypatch.delenv("LABKIT_DATA_DIR", raising=False)
    assert shared.mnist_folder() == tmp_path / "data" / "mnist" == shared.real_mnist()
    assert "set LABKIT_SHARED" in shared.missing_message(shared.mnist_folder())


def test_a_missing_labkit_data_dir_is_named_in_the_skip(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_DATA_DIR", str(tmp_path / "gone"))
    assert shared.missing_message(Path(tmp_path / "gone")).endswith(
        "not found: LABKIT_DATA_DIR names it; set it to a folder with the MNIST IDX files")
