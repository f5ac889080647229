"""Opens a log for reading as bytes: plain, gzip or zstd (by magic bytes), or stdin."""
from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO

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


def is_compressed(head: bytes) -> bool:
    """Whether a file's first bytes start a gzip or zstd stream."""
    return head.startswith(GZIP_MAGIC) or head.startswith(ZSTD_MAGIC)


def plain_size(path: str | os.PathLike[str]) -> int | None:
    """The size of an uncompressed regular file (what a scan of it will read), else None."""
    try:
        if str(path) == "-" or not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            head = fh.read(4)
        return None if is_compressed(head) else os.path.getsize(path)
    except OSError:
        return None


ZSTD_FEED = 16384  # compressed bytes per zstd step: bounds what one step can inflate to (512 MiB)


class _ZstdFrames:
    """Decompresses concatenated zstd frames; a stream that stops inside a frame raises EOFError."""

    def __init__(self, fh: BinaryIO) -> None:
        import zstandard  # lazy: only .zst inputs pay for it

        self.fh, self.dctx = fh, zstandard.ZstdDecompressor()
        self.obj = self.dctx.decompressobj(write_size=1 << 20)
        self.in_frame = False
        self.pending: deque[bytes] = deque()  # decompressed pieces not handed out yet
        self.off = 0  # how much of pending[0] was handed out
        self.done = False
        self.cut = False

    def read(self, n: int) -> bytes:
        while not self.pending and not self.done:
            chunk = self.fh.read(ZSTD_FEED)
            if not chunk:
                self.done = True
                self.cut = self.in_frame
                break
            while chunk:
                if self.obj.eof:
                    self.obj = self.dctx.decompressobj(write_size=1 << 20)
                self.in_frame = True
                out = self.obj.decompress(chunk)
                if out:
                    self.pending.append(out)
                chunk = self.obj.unused_data if self.obj.eof else b""
                if self.obj.eof:
                    self.in_frame = False
        if not self.pending:
            if self.cut:  # raised only once what came before the cut was handed out
                raise EOFError("the zstd frame ends before its end mark")
            return b""
        head, off = self.pending[0], self.off
        if len(head) - off <= n:
            self.pending.popleft()
            self.off = 0
            return head[off:] if off else head
        self.off = off + n
        return head[off:off + n]

    def close(self) -> None:
        self.fh.close()


class _Guarded(io.RawIOBase):
    """Decompressed bytes of a log; a truncated or corrupt compressed stream is caught at the cut.

    strict: the cut raises InputError (`forensics scan`: one-line error). Otherwise the stream
    ends at the cut and `truncated` holds a one-line note (ingest keeps what was read).
    """

    def __init__(self, inner: Any, name: str, kind: str, strict: bool, source: Any = None) -> None:
        self.inner, self.name, self.kind, self.strict = inner, name, kind, strict
        self.source = source  # the compressed file, when closing `inner` leaves it open (GzipFile)
        self.truncated: str | None = None
        self.delivered = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self.truncated:
            return 0
        try:
            data = self.inner.read1(len(b)) if hasattr(self.inner, "read1") else self.inner.read(len(b))
        except (EOFError, OSError, zlib.error) as exc:
            self._cut(exc)
            return 0
        except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError and friends
            if type(exc).__module__.split(".")[0] != "zstandard":
                raise
            self._cut(exc)
            return 0
        n = len(data)
        b[:n] = data
        self.delivered += n
        return n

    def _cut(self, exc: BaseException) -> None:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        self.truncated = (f"{self.name}: truncated or corrupt {self.kind} data after {self.delivered} "
                          f"bytes of log ({reason}); facts up to the cut are kept")
        if self.strict:
            raise InputError(f"{self.name} is a truncated or corrupt {self.kind} file",
                             f"decompression failed after {self.delivered} bytes of log ({reason})",
                             hint=f"recover the readable part with `{'zcat' if self.kind == 'gzip' else 'zstdcat'} "
                                  f"{self.name} > part.log` and scan that") from None

    def close(self) -> None:
        try:
            self.inner.close()
            if self.source is not None:
                self.source.close()
        finally:
            super().close()


def _decompress(fh: BinaryIO, name: str, strict: bool = True) -> BinaryIO:
    buffered = fh if isinstance(fh, io.BufferedReader) else io.BufferedReader(fh)  # type: ignore[arg-type]
    head = buffered.peek(16)[:16]
    if head.startswith(GZIP_MAGIC):
        gz = gzip.GzipFile(fileobj=buffered, mode="rb")
        return io.BufferedReader(_Guarded(gz, name, "gzip", strict, buffered), 1 << 20)  # type: ignore[return-value]
    if head.startswith(ZSTD_MAGIC):
        return io.BufferedReader(_Guarded(_ZstdFrames(buffered), name, "zstd", strict), 1 << 20)  # type: ignore[return-value]
    for magic in BINARY_MAGIC:
        if head.startswith(magic):
            buffered.close()
            raise InputError(f"{name} is not a text log", f"it starts like a binary file ({magic!r})",
                             hint="pass the server log (plain, .gz or .zst)")
    probe = buffered.peek(8192)[:8192]
    if probe and probe.count(b"\x00") > len(probe) // 10:
        buffered.close()
        raise InputError(f"{name} is not a text log", "it is mostly NUL bytes", hint="pass the server log (plain, .gz or .zst)")
    return buffered
