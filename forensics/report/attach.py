"""Find the run a report is about (an id in the archive or a run folder) and attach reports to it."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from forensics.archive import Connection, open_archive
from forensics.errors import ForensicsError

REPORTS_DDL = """CREATE TABLE IF NOT EXISTS reports (
    run_id VARCHAR, format VARCHAR, path VARCHAR, created_at TIMESTAMP, verdict VARCHAR
)"""
DEFAULT_ARCHIVE = "forensics.duckdb"


@dataclass
class Target:
    """Where a run's data lives for this command."""

    archive: Path
    run_id: str
    run_dir: Path | None
    temporary: tempfile.TemporaryDirectory | None = None

    def close(self) -> None:
        if self.temporary is not None:
            self.temporary.cleanup()
            self.temporary = None


def resolve(run: str, archive: str | None) -> Target:
    """A run folder is ingested (into `archive`, or a temporary archive); anything else is a run id.

    Raises:
        ForensicsError: the folder holds no run, or several; ingest errors.
    """
    p = Path(run)
    if p.is_dir():
        from forensics.ingest import ingest_paths

        tmp = None
        if archive is None:
            tmp = tempfile.TemporaryDirectory(prefix="forensics-report-")
            archive = str(Path(tmp.name) / "report.duckdb")
        try:
            rep = ingest_paths(Path(archive), [p])
        except BaseException:
            if tmp is not None:
                tmp.cleanup()
            raise
        ids = rep.runs
        if rep.failed and not ids:
            if tmp is not None:
                tmp.cleanup()
            raise ForensicsError(f"cannot ingest {p}", rep.failed[0][1])
        run_id = p.resolve().name if p.resolve().name in ids else (ids[0] if len(ids) == 1 else None)
        if run_id is None:
            if tmp is not None:
                tmp.cleanup()
            raise ForensicsError(f"{p} is not one run", f"found {len(ids)} runs" if ids else "found no files",
                                 hint="pass one run folder (the folder holding server.log, cmd.sh, results)")
        return Target(Path(archive), run_id, p, tmp)
    return Target(Path(archive or DEFAULT_ARCHIVE), run, None)


def run_dir_of(con: Connection, run_id: str) -> Path | None:
    row = con.execute("SELECT path FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if not row or not row[0] or "!" in row[0]:
        return None
    d = Path(row[0])
    return d if d.is_dir() else None


def record(archive: Path, run_id: str, fmt: str, path: Path, verdict: str) -> None:
    """Record an attached report in the archive's `reports` table (created on first use)."""
    con = open_archive(archive)
    try:
        con.execute(REPORTS_DDL)
        con.execute("DELETE FROM reports WHERE run_id = ? AND format = ?", [run_id, fmt])
        con.execute("INSERT INTO reports VALUES (?, ?, ?, ?, ?)",
                    [run_id, fmt, str(path), datetime.now(timezone.utc).replace(tzinfo=None), verdict])
    finally:
        con.close()
