"""`save(obj, path)` and `load(path)`: nested state (dicts, lists, arrays, numbers) in a NumPy `.npz` file.

The format, readable with NumPy alone and never unpickled:

- A `.npz` file is a zip archive holding one `.npy` file per array. Loading uses `allow_pickle=False`, so a
  file cannot run code, whoever wrote it.
- Each array is stored under its path in the nested structure: a model's state dict `{"fc.weight": ...}`
  gives the entry `fc.weight`, an optimiser's `state/0/exp_avg`. `numpy.load(path)["fc.weight"]` reads
  one back without leakygrad.
- The entry `__leakygrad__` holds a small JSON *manifest* (UTF-8 bytes stored as a uint8 array) describing
  the structure around the arrays: `{"format": "leakygrad", "version": 1, "tree": ...}` where the tree is
  JSON with four tagged forms, `{"array": name}`, `{"dict": [[key, value], ...]}` (keys are strings or
  integers, order kept), `{"tuple": [...]}` and `{"float": "nan" | "inf" | "-inf"}`; lists, strings,
  finite numbers, booleans and None are plain JSON.
- A plain `.npz` written by NumPy (no manifest) loads as a dict of its arrays.

Writing is atomic: the archive goes to a temporary file in the same directory, is flushed to disk
(fsync), and only then renamed over the target (`os.replace`, atomic on POSIX and Windows). A crash
mid-save leaves the previous file untouched. A path that is a symbolic link is written through: the file it
points to is replaced, and the link stays (as `open(path, "wb")` and `numpy.savez` behave).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import zipfile
import zlib

import numpy as np

from leakygrad.engine.errors import LeakygradError
from leakygrad.engine.tensor import Tensor

FORMAT_NAME = "leakygrad"
FORMAT_VERSION = 1
MANIFEST_KEY = "__leakygrad__"


class CorruptFileError(LeakygradError, ValueError):
    """A file that should hold saved leakygrad state cannot be read: truncated, corrupted, or another format."""


# ---------------------------------------------------------------------------------------------- saving


def save(obj, path) -> None:
    """Save `obj` to `path` (written exactly there; `.npz` is the customary suffix).

    `obj` is a nested structure of dicts (string or integer keys), lists, tuples, NumPy arrays, Tensors
    (saved as their arrays), numbers, strings, booleans and None; or anything with a `state_dict()`
    method (a model, an optimiser, a scheduler), whose state dict is saved.
    """
    path = os.fspath(path)
    if hasattr(obj, "state_dict") and callable(obj.state_dict):
        obj = obj.state_dict()
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(obj, "", arrays)
    manifest = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "tree": tree}
    manifest_bytes = json.dumps(manifest, allow_nan=False).encode("utf-8")
    entries = {MANIFEST_KEY: np.frombuffer(manifest_bytes, dtype=np.uint8), **arrays}
    write_atomically(path, lambda file: _write_npz(file, entries))


def _encode(value, where: str, arrays: dict[str, np.ndarray]):
    """The JSON form of `value`; arrays go into `arrays` under a name made from their path `where`."""
    if isinstance(value, Tensor):
        value = value.data
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(
                f"save: the array at '{where or '/'}' holds Python objects (dtype object), which cannot be "
                "stored without pickle; convert it to numbers first"
            )
        return {"array": _store_array(value, where, arrays)}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"float": repr(value)}  # 'nan', 'inf', '-inf'
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if isinstance(key, np.integer):
                key = int(key)
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"save: dict keys must be strings or integers; '{where or '/'}' has key {key!r}")
            items.append([key, _encode(item, _join(where, key), arrays)])
        return {"dict": items}
    if isinstance(value, tuple):
        return {"tuple": [_encode(item, _join(where, i), arrays) for i, item in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(item, _join(where, i), arrays) for i, item in enumerate(value)]
    raise TypeError(
        f"save: cannot store a {type(value).__name__} (at '{where or '/'}'). Saved state may hold arrays, Tensors, "
        "numbers, strings, booleans, None, and lists, tuples and dicts of these."
    )


def _join(where: str, key) -> str:
    return f"{where}/{key}" if where else str(key)


def _store_array(array: np.ndarray, where: str, arrays: dict[str, np.ndarray]) -> str:
    name = where or "array"
    if name == MANIFEST_KEY:
        raise ValueError(f"save: the key '{MANIFEST_KEY}' is reserved for leakygrad's manifest")
    if "\x00" in name:  # a zip archive cuts a member's name there: the array could never be found again
        raise ValueError(f"save: the key {name!r} holds a NUL character, which an .npz file cannot store")
    unique, n = name, 1
    while unique in arrays:  # e.g. {"a/b": x, "a": {"b": y}}: both paths read a/b
        n += 1
        unique = f"{name}~{n}"
    arrays[unique] = array
    return unique


def _write_npz(file, entries: dict[str, np.ndarray]) -> None:
    """What `numpy.savez` writes (one `name.npy` per array in an uncompressed zip), refusing pickled data."""
    with zipfile.ZipFile(file, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in entries.items():
            with archive.open(name + ".npy", mode="w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def write_atomically(path: str, write) -> None:
    """Call `write(file)` on a temporary file next to `path`, sync it to disk, then rename it over `path`.

    Either the old file or the complete new one is at `path`, never a half-written one. If `write` raises,
    the temporary file is removed and the old file is left as it was.
    """
    path = os.path.realpath(path)  # through a symbolic link: the file it points to is the one replaced
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        if os.path.exists(directory):
            raise NotADirectoryError(
                f"save: cannot write {os.path.basename(path)} in {directory}: that is a file, not a folder"
            )
        raise FileNotFoundError(f"save: no folder {directory} to write {os.path.basename(path)} in; create it first")
    if os.path.isdir(path):
        raise IsADirectoryError(f"save: '{path}' is a folder; give the name of a file to write")
    mode = _file_mode_for(path)
    try:  # (the temporary name is short, so that any name the target may have still fits)
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{os.path.basename(path)[:32]}.", suffix=".tmp", dir=directory
        )
    except OSError as error:
        raise type(error)(error.errno, f"save: cannot write in {directory} ({error.strerror})") from error
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_directory(directory)


def _file_mode_for(path: str) -> int:
    """Keep an existing file's permissions; a new file gets the usual ones (0o666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _sync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); not possible, nor needed, on Windows."""
    if os.name != "posix":
        return
    # (the file is in place already: a folder that cannot be opened or synced, a writable but unreadable one or a
    # file system without directory sync, leaves the rename atomic, only not yet flushed: no error for that)
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# ---------------------------------------------------------------------------------------------- loading


def load(path):
    """Load what `save` wrote (arrays come back as NumPy arrays), or the arrays of a plain NumPy `.npz`."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load: there is no file '{path}'")
    if os.path.isdir(path):
        raise IsADirectoryError(f"load: '{path}' is a folder, not a saved file")
    arrays = _read_npz(path)
    if MANIFEST_KEY not in arrays:
        return arrays  # a plain .npz, e.g. from numpy.savez
    try:
        manifest = json.loads(arrays.pop(MANIFEST_KEY).tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptFileError(f"load: the manifest of '{path}' is damaged ({error})") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME or "tree" not in manifest:
        raise CorruptFileError(f"load: '{path}' has a '{MANIFEST_KEY}' entry that is not a leakygrad manifest")
    version = manifest.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptFileError(f"load: the manifest of '{path}' gives the format version as {version!r}, not a number")
    if version > FORMAT_VERSION:
        raise CorruptFileError(
            f"load: '{path}' was written in leakygrad format version {manifest['version']}, newer than this "
            f"leakygrad reads ({FORMAT_VERSION}); upgrade leakygrad"
        )
    return _decode(manifest["tree"], arrays, path)


def _read_npz(path: str) -> dict[str, np.ndarray]:
    """Every array in the archive, read fully (so a damaged entry is found now, not later)."""
    with open(path, "rb") as file:
        start = file.read(6)
    if start and not start.startswith((b"PK", np.lib.format.MAGIC_PREFIX)):  # (how a zip and an .npy begin)
        raise CorruptFileError(
            f"load: '{path}' is not an .npz file (an .npz file is a zip archive, and this one does not begin as "
            "one does): check that this is the file you meant to load"
        )
    try:
        archive = np.load(path, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise CorruptFileError(f"load: '{path}' holds a single .npy array, not an .npz archive")
        with archive:
            # Read by member name ("x.npy"), not by array name: NumPy would give member "x.npy", the array
            # "x", to a request for the array "x.npy" (stored as "x.npy.npy").
            arrays = {}
            for member in archive.zip.namelist():
                value = archive[member]
                if not isinstance(value, np.ndarray):  # NumPy hands over the raw bytes of a member that is no .npy
                    raise CorruptFileError(
                        f"load: '{path}' is a zip archive but not an .npz file: its entry '{member}' is not a NumPy "
                        "array. (A PyTorch file from torch.save is a zip archive too; leakygrad reads the files "
                        "its save and numpy.savez write.)"
                    )
                arrays[member.removesuffix(".npy")] = value
            return arrays
    except (
        zipfile.BadZipFile,
        ValueError,
        OSError,
        EOFError,
        KeyError,
        NotImplementedError,
        RuntimeError,
        zlib.error,
    ) as error:  # fmt: skip  (what a damaged zip raises, flags and version bytes included)
        if isinstance(error, CorruptFileError):
            raise
        raise CorruptFileError(
            f"load: cannot read '{path}': it is truncated or corrupted, or not an .npz file "
            f"({type(error).__name__}: {error}). A save interrupted by a crash never replaces the old file, "
            "so this file was damaged afterwards (or is not what you meant to load)."
        ) from error


def _decode(node, arrays: dict[str, np.ndarray], path: str):
    """The value a manifest node describes. The manifest passed the archive's checksum, but it may still have been
    written by something else than leakygrad's `save`: every form is checked, and one that is not as `save` writes
    it is a CorruptFileError naming the file and the node (never a bare TypeError from deep inside)."""
    if isinstance(node, list):
        return [_decode(item, arrays, path) for item in node]
    if not isinstance(node, dict):
        return node  # a string, number, boolean or None
    if len(node) != 1:
        raise _bad_node(path, node, "a tagged form has exactly one key")
    tag, content = next(iter(node.items()))
    if tag == "array":
        if not isinstance(content, str):
            raise _bad_node(path, node, "an array is named by a string")
        if content not in arrays:
            raise CorruptFileError(f"load: '{path}' lists an array '{content}' that the archive does not contain")
        return arrays[content]
    if tag == "dict":
        if not isinstance(content, list) or not all(
            isinstance(item, list) and len(item) == 2 and isinstance(item[0], (str, int)) for item in content
        ):
            raise _bad_node(path, node, "a dict is a list of [key, value] pairs with string or integer keys")
        return {key: _decode(value, arrays, path) for key, value in content}
    if tag == "tuple":
        if not isinstance(content, list):
            raise _bad_node(path, node, "a tuple is a list of values")
        return tuple(_decode(item, arrays, path) for item in content)
    if tag == "float":
        if content not in ("nan", "inf", "-inf"):
            raise _bad_node(path, node, "a tagged float is 'nan', 'inf' or '-inf'")
        return float(content)
    raise CorruptFileError(f"load: '{path}' has a manifest entry leakygrad does not know: {_short(node)}")


def _bad_node(path: str, node: dict, rule: str) -> CorruptFileError:
    return CorruptFileError(
        f"load: the manifest of '{path}' is damaged or was not written by leakygrad: {rule}, but it has {_short(node)}"
    )


def _short(node) -> str:
    text = json.dumps(node)
    return text if len(text) <= 80 else text[:77] + "..."
