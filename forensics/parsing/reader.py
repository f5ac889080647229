"""Opens a log for reading as bytes: plain, gzip or zstd (by magic bytes), or stdin."""
from __future__ import annotations

import gzip
import io
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from forensics.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BINARY_MAGIC = (b"\x7fELF", b"PK\x03\x04", b"\x89PNG", b"%PDF", b"\xff\xd8\xff", b"MZ", b"SQLite format 3", b"DUCK", b"PAR1")




def open_log(path: str | os.PathLike[str]) -> tuple[BinaryIO, str]:
    """Open a log file (or `-` for stdin) as a binary stream of decompressed bytes.

    Returns:
        The stream and the name to cite as evidence (`<stdin>` for `-`).

    Raises:
        InputError: the path is missing, a directory, unreadable, or not a text log
            (an executable, an image, a database).
    """
    name = str(path)
    if name == "-":
        raw: BinaryIO = io.BufferedReader(sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer)  # type: ignore[arg-type]
        return _decompress(raw, "<stdin>"), "<stdin>"
    p = Path(name)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"no such file: {name}", hint="check the path") from None
    except OSError as exc:
        raise InputError(f"cannot read {name}", exc.strerror or str(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name} is a directory", "scan reads one log file",
                         hint=f"pass a log inside it, or use `forensics ingest {name}` for a run folder")
    try:
        fh = open(p, "rb")  # noqa: SIM115 - handed to the caller
    except OSError as exc:
        raise InputError(f"cannot open {name}", exc.strerror or str(exc), hint="check its permissions") from None
    return _decompress(fh, name), name


def _decompress(fh: BinaryIO, name: str) -> BinaryIO:
    buffered = fh if isinstance(fh, io.BufferedReader) else io.BufferedReader(fh)  # type: ignore[arg-type]
    head = buffered.peek(16)[:16]
    if head.startswith(GZIP_MAGIC):
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    if head.startswith(ZSTD_MAGIC):
        import zstandard  # lazy: only .zst inputs pay for it

        return zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)  # type: ignore[return-value]
    for magic in BINARY_MAGIC:
        if head.startswith(magic):
            raise InputError(f"{name} is not a text log", f"it starts like a binary file ({magic!r})",
                             hint="pass the server log (plain, .gz or .zst)")
    probe = buffered.peek(8192)[:8192]
    if probe and probe.count(b"\x00") > len(probe) // 10:
        raise InputError(f"{name} is not a text log", "it is mostly NUL bytes", hint="pass the server log (plain, .gz or .zst)")
    return buffered
