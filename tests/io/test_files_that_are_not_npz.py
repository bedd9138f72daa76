"""Files that are not .npz archives, and a folder that is a file, are named for what they are."""

import zipfile

import numpy as np
import pytest
import torch

from leakygrad import io


def test_a_pytorch_file_is_refused_not_returned_as_raw_bytes(tmp_path):
    torch.save({"weight": torch.ones(2)}, tmp_path / "model.pt")  # a zip archive holding a pickle
    with pytest.raises(io.CorruptFileError, match=r"model\.pt' is a zip archive but not an \.npz file: its entry"):
        io.load(tmp_path / "model.pt")
    with zipfile.ZipFile(tmp_path / "notes.zip", "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(io.CorruptFileError, match="entry 'readme.txt' is not a NumPy array"):
        io.load(tmp_path / "notes.zip")


def test_a_file_that_is_no_archive_is_not_called_pickled_data(tmp_path):
    # NumPy takes any file that is neither a zip nor an .npy for a pickle, and suggests loading it unsafely.
    (tmp_path / "losses.csv").write_text("step,loss\n1,0.5\n")
    torch.save({"w": torch.ones(1)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    for name in ("losses.csv", "old.pt"):
        with pytest.raises(io.CorruptFileError, match=f"'.*{name}' is not an .npz file") as caught:
            io.load(tmp_path / name)
        assert "pickle" not in str(caught.value)


def test_saving_where_the_folder_is_a_file_says_so(tmp_path):
    (tmp_path / "runs").write_text("a file, not a folder")
    with pytest.raises(NotADirectoryError, match=r"cannot write model\.npz in .*runs: that is a file, not a folder"):
        io.save({"w": np.ones(2)}, tmp_path / "runs" / "model.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_a_folder_that_cannot_be_opened_for_sync_does_not_fail_a_save_that_succeeded(tmp_path, monkeypatch):
    """The file is renamed into place before its folder is synced: a folder that is writable but not readable
    (os.open refuses it) must not turn the finished save into an exception."""
    import os

    from leakygrad.io import npz

    real_open = os.open

    def refuse_folders(path, flags, *args, **kwargs):
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(npz.os, "open", refuse_folders)
    path = tmp_path / "model.npz"
    io.save({"w": np.ones(3)}, path)
    assert np.array_equal(io.load(path)["w"], np.ones(3))
