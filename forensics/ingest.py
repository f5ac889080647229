"""Ingest campaign run folders (or tar archives of them) into the DuckDB archive.

A run folder is any folder holding files; its name is the run id and the folder above it
the campaign. Files are recognised by content: engine logs (through the scan parsers),
the launch command, benchmark results and telemetry (`forensics.importers`), the
sampler's Parquet. Each run is written in one transaction, keyed by a hash of its files:
re-ingesting an unchanged run changes nothing, a changed run replaces its rows, and a
failure half-way leaves the archive as it was. The archive is opened per run, so two
ingests into one archive take turns on DuckDB's write lock instead of failing.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

from forensics.errors import ForensicsError, InputError

MAX_MEMBER_BYTES = 8 << 30        # a tar member larger than this is refused (decompression bombs)
MAX_TOTAL_BYTES = 256 << 30       # and so is an archive that inflates past this in total
MAX_RUN_BYTES = 4 << 30           # a run read from a tar is held in memory: its files together stay below this
MAX_RESULT_BYTES = 1 << 30        # result/telemetry files are read whole; larger ones are skipped
LOG_MARKERS = (b"vllm", b"sglang", b"EngineCore", b"ServerArgs(", b"Decode batch", b"Prefill batch",
               b"KV cache", b"Traceback", b"INFO ", b"Avg prompt throughput", b"max_total_num_tokens")


@dataclass
class RunFile:
    relpath: str
    size: int
    opener: Callable[[], io.BufferedIOBase]


@dataclass
class RunSource:
    run_id: str
    campaign: str | None
    path: str
    files: list[RunFile] = field(default_factory=list)


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    problems: int = 0
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def runs(self) -> list[str]:
        return self.added + self.replaced + self.unchanged


# ---------------------------------------------------------------- discovery

def _is_tar(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and (name.endswith((".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd")))


def discover(paths: list[Path]) -> Iterator[RunSource]:
    """Yield the runs under each path: folders holding files, or tar archives of them."""
    for path in paths:
        if not path.exists():
            raise InputError(f"no such file or folder: {path}", hint="check the path")
        if _is_tar(path):
            yield from _tar_runs(path)
        elif path.is_dir():
            yield from _dir_runs(path)
        else:
            raise InputError(f"{path} is not a run folder or a tar archive",
                             hint="pass run folders, a campaign folder, or .tar/.tar.gz/.tar.zst archives")


def _dir_runs(root: Path) -> Iterator[RunSource]:
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        d = Path(dirpath)
        try:
            st = d.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue  # a loop through bind mounts
        seen.add((st.st_dev, st.st_ino))
        files = []
        for name in sorted(filenames):
            p = d / name
            if p.is_symlink() or not p.is_file():
                continue  # links are not followed: they may point outside the run
            files.append(RunFile(name, p.stat().st_size, (lambda p=p: open(p, "rb"))))
        if not files:
            continue
        campaign = d.parent.name if d != root or d.parent != d else None
        yield RunSource(d.name, campaign, str(d), files)


def _open_tar(path: Path) -> tuple[tarfile.TarFile, Any]:
    """The tar, and the stream under it that closing the tar leaves open (None if none)."""
    name = path.name.lower()
    if name.endswith((".tar.zst", ".tar.zstd")):
        import zstandard

        stream = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True)
        return tarfile.open(fileobj=stream, mode="r|"), stream
    return tarfile.open(path, mode="r|*"), None


def _tar_runs(path: Path) -> Iterator[RunSource]:
    """Runs inside a tar, read as a stream (nothing extracted to disk).

    Members must be regular files with relative paths; absolute paths, `..`, links and
    devices are skipped. Members of one run must be contiguous (tar writes folders so).
    """
    total = 0
    run_bytes = 0
    current: RunSource | None = None
    tf = under = None
    try:
        tf, under = _open_tar(path)
        for m in tf:
            p = PurePosixPath(m.name)
            if not m.isfile() or p.is_absolute() or ".." in p.parts:
                continue
            if m.size > MAX_MEMBER_BYTES:
                raise InputError(f"{path}: member {m.name} is {m.size} bytes", "over the member size limit",
                                 hint=f"members above {MAX_MEMBER_BYTES >> 30} GiB are refused as possible bombs")
            total += m.size
            if total > MAX_TOTAL_BYTES:
                raise InputError(f"{path} inflates past {MAX_TOTAL_BYTES >> 30} GiB", "possible decompression bomb")
            parent = p.parent
            run_id = parent.name or path.name.split(".")[0]
            campaign = parent.parent.name if parent.parent.name else path.name.split(".")[0]
            key = str(parent)
            if current is None or current.path != f"{path}!{key}":
                if current is not None:
                    yield current
                current = RunSource(run_id, campaign, f"{path}!{key}")
                run_bytes = 0
            run_bytes += m.size
            if run_bytes > MAX_RUN_BYTES:
                raise InputError(f"{path}: run {run_id} holds more than {MAX_RUN_BYTES >> 30} GiB",
                                 "runs inside a tar are read into memory, never extracted",
                                 hint="extract the archive and ingest the folder instead")
            fh = tf.extractfile(m)
            data = fh.read() if fh is not None else b""
            current.files.append(RunFile(p.name, len(data), (lambda data=data: io.BytesIO(data))))
        if current is not None:
            yield current
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(f"cannot read archive {path}", str(exc) or type(exc).__name__,
                         hint="is it a complete .tar, .tar.gz or .tar.zst file?") from None
    finally:
        for h in (tf, under):
            if h is not None:
                h.close()


# ---------------------------------------------------------------- classification

def _head(f: RunFile, n: int = 65536) -> bytes:
    from forensics.parsing.reader import _decompress, is_compressed

    with f.opener() as fh:
        raw = fh.read(n)
    if is_compressed(raw):
        with _decompress(f.opener(), f.relpath, strict=False) as z:  # a cut file still shows its head
            return z.read(n) or raw
    return raw


def classify(f: RunFile, head: bytes) -> tuple[str, Any]:
    """What a file is: (kind, importer or None). Kinds: parquet, result, command, log, other."""
    from forensics import importers

    if head[:4] == b"PAR1":
        return "parquet", None
    name = f.relpath.rsplit("/", 1)[-1]
    text_head = head[:4096]
    if name == "cmd.sh" or (f.size < 65536 and (b"sglang.launch_server" in text_head or b"vllm serve" in text_head
                                               or b"vllm.entrypoints" in text_head) and text_head.count(b"\n") < 60):
        return "command", None
    imp = importers.detect(head, name)
    if imp is not None:
        return "result", imp
    if any(m in head for m in LOG_MARKERS):
        return "log", None
    return "other", None


# ---------------------------------------------------------------- reading a run

@dataclass
class RunData:
    source: RunSource
    content_hash: str
    files: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    run_row: dict[str, Any] = field(default_factory=dict)

    def add(self, table: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.tables.setdefault(table, []).extend(rows)


def read_run(src: RunSource) -> RunData:
    """Parse every file of a run in memory (no archive lock held)."""
    from forensics.scan import RuntimeRow, apply_command, parse_command, scan_stream
    from forensics.parsing.reader import _decompress

    digest = hashlib.sha256()
    files_meta = []
    unreadable = []
    for f in sorted(src.files, key=lambda f: f.relpath):
        h = hashlib.sha256()
        try:
            with f.opener() as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:  # unreadable (permissions, I/O error): reported, the rest of the run is read
            digest.update(f.relpath.encode() + b"\0unreadable")
            unreadable.append({"file": f"{src.run_id}/{f.relpath}",
                               "message": f"unreadable: {exc.strerror or type(exc).__name__}; file skipped"})
            continue
        digest.update(f.relpath.encode() + b"\0" + h.digest())
        files_meta.append((f, h.hexdigest()))
    data = RunData(src, digest.hexdigest())
    data.add("problems", unreadable)
    logs = []
    command = None
    for f, sha in files_meta:
        head = _head(f)
        kind, imp = classify(f, head)
        tool = getattr(imp, "TOOL", None)
        file_label = f"{src.run_id}/{f.relpath}"
        data.files.append({"path": file_label, "kind": kind, "tool": tool, "sha256": sha, "bytes": f.size})
        if kind == "command":
            with f.opener() as fh:
                command = parse_command(fh.read().decode("utf-8", "replace"), file_label)
        elif kind == "result":
            if f.size > MAX_RESULT_BYTES:
                data.add("problems", [{"file": file_label, "message": f"skipped: larger than {MAX_RESULT_BYTES >> 20} MiB"}])
                continue
            with f.opener() as fh:
                raw = fh.read()
            if raw[:2] == b"\x1f\x8b" or raw[:4] == b"\x28\xb5\x2f\xfd":
                from forensics.parsing.reader import _decompress

                with _decompress(io.BytesIO(raw), file_label, strict=False) as z:  # bounded: no bomb
                    raw = z.read(MAX_RESULT_BYTES + 1)
                    cut = z.raw.truncated
                if len(raw) > MAX_RESULT_BYTES:
                    data.add("problems", [{"file": file_label,
                                           "message": f"skipped: inflates past {MAX_RESULT_BYTES >> 20} MiB"}])
                    continue
                if cut:
                    data.add("problems", [{"file": file_label, "message": cut}])
            res = imp.read(raw, file_label)
            for table in ("bench_points", "requests", "gpu_samples", "probes"):
                data.add(table, getattr(res, table))
            data.add("problems", res.problems)
        elif kind == "parquet":
            data.add("gpu_samples", _read_parquet(f, file_label, data))
        elif kind == "log":
            series: list[dict[str, Any]] = []

            def keep(row: RuntimeRow, series=series, file_label=file_label) -> None:
                v = row.values
                series.append({"file": file_label, "line": row.line, "time_raw": row.time, "rank": row.rank,
                               "kind": row.kind, "running": v.get("running"), "waiting": v.get("waiting"),
                               "kv_usage_pct": v.get("kv_usage_pct"), "token_usage": v.get("token_usage"),
                               "prompt_throughput": v.get("prompt_throughput"),
                               "gen_throughput": v.get("gen_throughput"), "values_json": json.dumps(v)})

            with f.opener() as fh:
                try:
                    stream = _decompress(fh, file_label, strict=False)  # a cut .gz/.zst keeps what precedes the cut
                except InputError as exc:
                    data.add("problems", [{"file": file_label, "message": exc.one_line()}])
                    continue
                res = scan_stream(stream, file_label, on_runtime=keep)
                cut = getattr(getattr(stream, "raw", None), "truncated", None)
                if cut:
                    data.add("problems", [{"file": file_label, "line": res.lines or None, "message": cut}])
            logs.append((f.size, res, series))
    primary = None
    if logs:
        logs.sort(key=lambda t: (t[1].engine is None, -t[0]))
        primary = logs[0][1]
        if command is not None:
            apply_command(primary, command)
        from forensics.logchecks import log_findings

        primary.findings = log_findings(primary)
        for _, res, series in logs:
            data.add("facts", _fact_rows(res))
            data.add("runtime", series)
            data.add("errors", [{"ordinal": i, "type": e.type, "message": e.message, "rank": e.rank,
                                 "consequence": e.consequence, "time_raw": e.time, **e.evidence.as_dict()}
                                for i, e in enumerate(res.errors)])
            if res.http_ok_after_fatal and res.http_ok_after_fatal_evidence is not None:
                data.add("http_after_fatal", [{"ok_count": res.http_ok_after_fatal,
                                               **res.http_ok_after_fatal_evidence.as_dict()}])
    elif command is not None:
        data.add("facts", [_fact_row("requested", k, v, None, None, command.evidence[k]) for k, v in command.args.items()])
    data.run_row = {
        "run_id": src.run_id, "campaign": src.campaign, "path": src.path, "content_hash": data.content_hash,
        "engine": (primary.engine if primary else None) or (command.engine if command else None),
        "engine_version": primary.engine_version.value if primary and primary.engine_version else None,
        "model": primary.model.value if primary and primary.model else None,
        "outcome": primary.outcome if primary else None,
        "ready_line": primary.ready.line if primary and primary.ready else None,
        "log_file": primary.source if primary else None,
        "ingested_at": datetime.now(timezone.utc).replace(tzinfo=None),
        "time_note": _align_clock(data),
    }
    _redact(data)
    return data


# Text columns that can carry a launch command or a log line, per table. Requests and GPU
# samples are numbers and short error texts: they are not scanned (10M rows per campaign).
_REDACT_COLUMNS = {"facts": ("value_text", "value_json", "raw"), "errors": ("message", "raw"),
                   "http_after_fatal": ("raw",), "problems": ("raw", "message"),
                   "bench_points": ("extra",), "probes": ("raw", "extra")}


def _redact(data: RunData) -> None:
    """Secrets never enter the archive, so sql, export and reports cannot leak them."""
    from forensics.redact import MASK, redact, redact_value

    for table, cols in _REDACT_COLUMNS.items():
        for row in data.tables.get(table, []):
            for c in cols:
                if isinstance(row.get(c), str):
                    row[c] = redact(row[c])
            if table == "facts" and row.get("section") == "requested":
                masked = redact_value(row["name"], row.get("value_text") or row.get("value_num"))
                if masked == MASK:
                    row.update(value_text=MASK, value_num=None, value_json=json.dumps(MASK))


_FULL_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?$")
_NO_YEAR_TS = re.compile(r"^(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d+))?$")


def _align_clock(data: RunData) -> str:
    """Put log times on the UTC epoch clock where it can be done honestly; say how.

    SGLang prints a full date; vLLM prints month-day only, so its year is taken from the
    run's own benchmark or telemetry times when they exist (a run never spans a new year
    in practice; a December log with January results is refused). Logs carry no zone:
    they are read as UTC, as the importers read nvidia-smi and vllm bench times.
    """
    import calendar

    stamps = [r.get("ts_end_utc") for r in data.tables.get("bench_points", [])]
    stamps += [r.get("ts_utc") for r in data.tables.get("gpu_samples", [])[:1000]]
    stamps = [t for t in stamps if isinstance(t, (int, float))]
    ref = datetime.fromtimestamp(min(stamps), timezone.utc) if stamps else None
    used = {"full": 0, "year_from_results": 0, "no_year": 0, "time_only": 0}

    def convert(raw: Any) -> float | None:
        if not isinstance(raw, str):
            return None
        m = _FULL_TS.match(raw)
        if m:
            used["full"] += 1
            y, mo, d, h, mi, sec, frac = m.groups()
            base = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(sec)))
            return base + (float("0." + frac) if frac else 0.0)
        m = _NO_YEAR_TS.match(raw)
        if m:
            mo, d, h, mi, sec, frac = m.groups()
            if ref is None or (ref.month == 1 and int(mo) == 12):
                used["no_year"] += 1
                return None
            used["year_from_results"] += 1
            base = calendar.timegm((ref.year, int(mo), int(d), int(h), int(mi), int(sec)))
            return base + (float("0." + frac) if frac else 0.0)
        used["time_only"] += 1
        return None

    for table in ("runtime", "errors"):
        for row in data.tables.get(table, []):
            row["ts_utc"] = convert(row.get("time_raw"))
    notes = []
    if used["full"]:
        notes.append(f"{used['full']} log times with a full date, read as UTC")
    if used["year_from_results"]:
        notes.append(f"{used['year_from_results']} vLLM log times (no year) given the year {ref.year} "
                     "of this run's benchmark/telemetry times, read as UTC")
    if used["no_year"]:
        notes.append(f"{used['no_year']} vLLM log times left off the clock: no year in the log and none "
                     "from results of the same run")
    if used["time_only"]:
        notes.append(f"{used['time_only']} log times without a date left off the clock")
    return "; ".join(notes) or "no log times"


def _read_parquet(f: RunFile, label: str, data: RunData) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        with f.opener() as fh:
            table = pq.read_table(io.BytesIO(fh.read()))
    except Exception as exc:  # noqa: BLE001 - any Arrow error is a problem row, not a crash
        data.add("problems", [{"file": label, "message": f"unreadable Parquet: {exc}"}])
        return []
    rows = table.to_pylist()
    for i, r in enumerate(rows):
        r["source_file"] = label
        r["line"] = i
        r.setdefault("source_tool", "forensics-sample")
    return rows


def _fact_row(section: str, name: str, value: Any, unit: str | None, rank: str | None, ev: Any,
              pattern: str | None = None) -> dict[str, Any]:
    num = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    text = value if isinstance(value, str) else None
    return {"section": section, "name": name, "value_num": num, "value_text": text,
            "value_json": json.dumps(value, default=str), "unit": unit, "rank": rank,
            "file": ev.file, "line": ev.line, "raw": ev.raw, "pattern": pattern}


def _fact_rows(res: Any) -> list[dict[str, Any]]:
    rows = []
    for section in ("meta", "requested", "effective", "runtime"):
        for name, f in getattr(res, section).items():
            rows.append(_fact_row(section, name, f.value, f.unit, f.rank, f.evidence, f.pattern))
    return rows


# ---------------------------------------------------------------- writing

RUN_TABLES = ("files", "facts", "runtime", "errors", "http_after_fatal", "bench_points", "requests",
              "gpu_samples", "probes", "problems", "findings")


def write_run(archive_path: Path, data: RunData, on_wait: Callable[[str], None] | None = None) -> str:
    """Write one run in one transaction; returns added | replaced | unchanged."""
    from forensics.archive import insert_rows, open_archive

    con = open_archive(archive_path, on_wait=on_wait)
    try:
        row = con.execute("SELECT content_hash FROM runs WHERE run_id = ?", [data.source.run_id]).fetchone()
        if row is not None and row[0] == data.content_hash:
            return "unchanged"
        con.execute("BEGIN TRANSACTION")
        try:
            rid = data.source.run_id
            con.execute("DELETE FROM runs WHERE run_id = ?", [rid])
            for t in RUN_TABLES:
                con.execute(f"DELETE FROM {t} WHERE run_id = ?", [rid])
            if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'reports'").fetchone()[0]:
                con.execute("DELETE FROM reports WHERE run_id = ?", [rid])  # a changed run's report is stale
            insert_rows(con, "runs", [data.run_row])
            insert_rows(con, "files", data.files, run_id=rid)
            for table, rows in data.tables.items():
                insert_rows(con, table, rows, run_id=rid)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return "added" if row is None else "replaced"
    finally:
        con.close()


def ingest_paths(archive_path: Path, paths: list[Path], progress: Callable[[RunSource], None] | None = None,
                 on_wait: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest every run under `paths` into the archive at `archive_path`.

    Raises:
        InputError: a path is missing or not a folder or tar archive.
        ArchiveError: the archive cannot be opened or stays locked.
    """
    report = IngestReport()
    for src in discover([Path(p) for p in paths]):
        try:
            data = read_run(src)
            status = write_run(Path(archive_path), data, on_wait=on_wait)
        except ForensicsError as exc:
            if exc.__class__.__name__ == "ArchiveError":
                raise
            report.failed.append((src.run_id, exc.one_line()))
            continue
        getattr(report, status).append(src.run_id)
        if status != "unchanged":
            for t, rows in data.tables.items():
                report.rows[t] = report.rows.get(t, 0) + len(rows)
            report.problems += len(data.tables.get("problems", []))
        if progress is not None:
            progress(src)
    return report
