"""Atomic output: a failed compile never leaves a partial or clobbered file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .diagnostics import ConvcError, Location


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write to a temp file beside `path`, fsync, then rename over it."""
    target = Path(path)
    payload = data.encode() if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as err:
        raise ConvcError(f"cannot write output: {err.strerror}", Location(file=str(path))) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise ConvcError(f"cannot write output: {err.strerror or err}", Location(file=str(path))) from None
        raise
