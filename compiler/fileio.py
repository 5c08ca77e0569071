"""Atomic output: a failed compile never leaves a partial or clobbered file."""

from __future__ import annotations

import contextlib
import os
import stat
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
        raise ConvcError(f"cannot write output: {err.strerror}", Location(file=str(path)), "I3") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), _mode_for(target))
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise ConvcError(f"cannot write output: {err.strerror or err}", Location(file=str(path)), "I3") from None
        raise


def _mode_for(target: Path) -> int:
    """The replaced file's permissions, or for a new file what `open` would give it
    (0666 less the umask): mkstemp's 0600 would hide the output from everyone else."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
