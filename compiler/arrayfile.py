"""Reading .npy/.npz files a model or `--inputs` names, without trusting them; writing
an .npz (`npz_bytes`).

Pickles are never loaded (object arrays are refused), the size an array's header
declares is checked against a limit before any array memory is allocated, and only
regular files are opened (a FIFO or a device would block or never end). Every failure
is an `ArrayFileError` with a one-line reason, for the caller to locate.
"""

from __future__ import annotations

import io
import lzma
import os
import stat
import tokenize
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO

import numpy as np
from numpy.lib import format as npy

from .dtypes import numpy_dtype

# Everything numpy/zipfile raise on a corrupt, truncated or hostile file.
# (numpy tokenizes version-1 headers: a damaged one can raise TokenError or SyntaxError.)
_READ_ERRORS = (OSError, ValueError, TypeError, EOFError, KeyError, RuntimeError, NotImplementedError, OverflowError,
                RecursionError, SyntaxError, tokenize.TokenError, zipfile.BadZipFile, zlib.error, lzma.LZMAError)


class ArrayFileError(Exception):
    """Why an array file cannot be used (one line)."""


class ArrayTooLarge(ArrayFileError):
    """The array's header declares more bytes than the caller allows; nothing was read."""

    def __init__(self, nbytes: int, limit: int, what: str):
        super().__init__(f"its array {what} needs {nbytes} bytes, over the limit of {limit} (--max-bytes)")
        self.nbytes = nbytes


class ArrayFile:
    """One open .npy (a single array named `arr_0`... as np.load has none: `names` is empty)
    or .npz (arrays by name)."""

    def __init__(self, handle: IO[bytes], archive: zipfile.ZipFile | None):
        self._handle = handle
        self._archive = archive

    @property
    def is_archive(self) -> bool:
        return self._archive is not None

    @property
    def names(self) -> list[str]:
        if self._archive is None:
            return []
        return [n[: -len(".npy")] for n in self._archive.namelist() if n.endswith(".npy")]

    def read(self, name: str | None, max_bytes: int) -> np.ndarray:
        """The array `name` (None for a plain .npy), refused before reading when it is an object
        array or would take more than `max_bytes`."""
        try:
            with self._open(name) as stream:
                _check_header(stream, max_bytes)
            with self._open(name) as stream:
                return npy.read_array(stream, allow_pickle=False)
        except ArrayFileError:
            raise
        except _READ_ERRORS as err:
            raise ArrayFileError(_reason(err)) from None

    def shape(self, name: str | None) -> tuple[int, ...]:
        """The shape the array's header declares; nothing else is read."""
        try:
            with self._open(name) as stream:
                return _read_header(stream)[0]
        except ArrayFileError:
            raise
        except _READ_ERRORS as err:
            raise ArrayFileError(_reason(err)) from None

    @contextmanager
    def _open(self, name: str | None) -> Iterator[IO[bytes]]:
        if self._archive is None:
            self._handle.seek(0)
            yield self._handle
        else:
            with self._archive.open(f"{name}.npy") as member:
                yield member


def _read_header(stream: IO[bytes]) -> tuple[tuple[int, ...], np.dtype]:
    version = npy.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = npy.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = npy.read_array_header_2_0(stream)
    else:
        raise ArrayFileError(f"unsupported .npy format version {version[0]}.{version[1]}")
    return tuple(shape), dtype


def _check_header(stream: IO[bytes], max_bytes: int) -> None:
    shape, dtype = _read_header(stream)
    if dtype.hasobject:
        raise ArrayFileError("it holds Python objects, and convc never unpickles")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if nbytes > max_bytes:
        raise ArrayTooLarge(nbytes, max_bytes, f"{list(shape)} {dtype}")


def _reason(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return getattr(err, "strerror", None) or text


@contextmanager
def open_array_file(path: str | os.PathLike[str]) -> Iterator[ArrayFile]:
    """Open a .npy or .npz (told apart by content, as np.load does); only regular files."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ArrayFileError("not a regular file")
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the archive
    except ArrayFileError:
        raise
    except _READ_ERRORS as err:
        raise ArrayFileError(_reason(err)) from None
    with handle:
        try:
            archive = zipfile.ZipFile(handle) if handle.read(4).startswith(b"PK") else None
        except _READ_ERRORS as err:
            raise ArrayFileError(_reason(err)) from None
        try:
            yield ArrayFile(handle, archive)
        finally:
            if archive is not None:
                archive.close()


def as_dtype(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`array` in `dtype`. np.save stores bfloat16 as raw 2-byte voids: those are bf16 bits, so
    they are reinterpreted as bf16 and refused for any other type (read as f16 they would be
    silently wrong numbers)."""
    if array.dtype.kind == "V" and array.dtype.names is None:
        if dtype == numpy_dtype("bf16") and array.dtype.itemsize == dtype.itemsize:
            return array.view(dtype)
        raise ValueError(f"raw {array.dtype.itemsize}-byte voids are read only as bf16 (np.save stores bfloat16 as 2-byte voids)")
    return array.astype(dtype)


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An uncompressed .npz of `arrays` in the mapping's order, as `np.savez` writes one,
    for any names (`np.savez`'s keyword arguments cannot be called `file`). Types numpy
    lacks (bf16, f8) are stored as raw bytes of their width (`|V2`, `|V1`)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy.write_array(member, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()
