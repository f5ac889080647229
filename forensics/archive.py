"""The run archive: the only module that imports duckdb.

An archive is one embedded DuckDB file (nothing to start). `open_archive` creates it with
`schema.sql` when needed; rules and `forensics sql` open it read-only.
"""
from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

import duckdb

from forensics.errors import ArchiveError

SCHEMA_VERSION = 1
LOCK_WAIT_S = 120.0

Connection = duckdb.DuckDBPyConnection


def schema_sql() -> str:
    return resources.files("forensics").joinpath("schema.sql").read_text(encoding="utf-8")


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc)
    return "lock" in text.lower() and ("Could not set lock" in text or "Conflicting lock" in text or "conflicting" in text.lower())


def open_archive(path: str | Path, read_only: bool = False, wait_s: float = LOCK_WAIT_S,
                 on_wait: Any = None) -> Connection:
    """Open (and, for writing, create) an archive.

    Args:
        path: the DuckDB file.
        read_only: open for queries only (rules, `forensics sql`).
        wait_s: how long to wait while another process holds the write lock.
        on_wait: called once with a message when we start waiting for the lock.

    Raises:
        ArchiveError: the file is missing (read-only), not a DuckDB file, or still locked
            after `wait_s`.
    """
    p = Path(path)
    if read_only and not p.exists():
        raise ArchiveError(f"no archive at {p}", hint=f"create it with `forensics ingest RUN_DIR --archive {p}`")
    if p.is_dir():
        raise ArchiveError(f"{p} is a directory", "an archive is one DuckDB file", hint="pass a file path to --archive")
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            con = duckdb.connect(str(p), read_only=read_only)
            break
        except duckdb.IOException as exc:
            if _is_lock_error(exc) and time.monotonic() < deadline:
                if not told and on_wait is not None:
                    on_wait(f"waiting for {p}: another forensics process is writing it")
                    told = True
                time.sleep(0.2)
                continue
            if _is_lock_error(exc):
                raise ArchiveError(f"archive {p} is locked", "another process kept it open for writing",
                                   hint="wait for the other `forensics ingest` to finish, then retry") from None
            raise ArchiveError(f"cannot open archive {p}", str(exc).splitlines()[0],
                               hint="is it a DuckDB file written by forensics?") from None
        except duckdb.Error as exc:
            raise ArchiveError(f"cannot open archive {p}", str(exc).splitlines()[0],
                               hint="is it a DuckDB file written by forensics?") from None
    if not read_only:
        try:
            con.execute(schema_sql())
            if con.execute("SELECT count(*) FROM schema_version").fetchone()[0] == 0:
                con.execute("INSERT INTO schema_version VALUES (?)", [SCHEMA_VERSION])
        except duckdb.Error as exc:
            con.close()
            raise ArchiveError(f"cannot set up archive {p}", str(exc).splitlines()[0]) from None
    return con


def memory_archive() -> Connection:
    """A fresh in-memory archive with the schema (tests of rules, temporary checks)."""
    con = duckdb.connect(":memory:")
    con.execute(schema_sql())
    return con


def table_columns(con: Connection, table: str) -> list[str]:
    return [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position", [table]
    ).fetchall()]


def insert_rows(con: Connection, table: str, rows: Sequence[dict[str, Any]], run_id: str | None = None) -> int:
    """Insert dict rows into a table through Arrow (missing keys become NULL, unknown keys are ignored)."""
    if not rows:
        return 0
    import pyarrow as pa

    cols = table_columns(con, table)
    keys: set[str] = set()
    for r in rows:  # every key of every row: rows of one file need not share a key set
        keys.update(r)
    present = [c for c in cols if c in keys and not (c == "run_id" and run_id is not None)]
    arrow = pa.table({c: pa.array([r.get(c) for r in rows]) for c in present}) if present else pa.table({"_": [0] * len(rows)})
    select = []
    for c in cols:
        if c == "run_id" and run_id is not None:
            select.append("$run_id AS run_id")
        elif c in present:
            select.append(f'"{c}"')
        else:
            select.append(f"NULL AS {c}")
    con.register("_forensics_rows", arrow)
    try:
        sql = f"INSERT INTO {table} SELECT {', '.join(select)} FROM _forensics_rows"
        con.execute(sql, {"run_id": run_id} if run_id is not None else None)
    finally:
        con.unregister("_forensics_rows")
    return len(rows)


def query(con: Connection, sql: str, params: Iterable[Any] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a query; return column names and rows."""
    try:
        cur = con.execute(sql, list(params) if params is not None else None)
    except duckdb.Error as exc:
        raise ArchiveError("query failed", str(exc).splitlines()[0]) from None
    names = [d[0] for d in cur.description] if cur.description else []
    return names, cur.fetchall()


RUNS_SQL = """
SELECT r.run_id, r.outcome, r.engine, r.engine_version, r.model,
       max(CASE WHEN f.section = 'requested' AND f.name IN ('max_num_seqs', 'max_running_requests') THEN f.value_num END) AS requested_running,
       max(CASE WHEN f.section = 'effective' AND f.name = 'max_running_requests' THEN f.value_num END) AS effective_running,
       max(CASE WHEN f.section = 'effective' AND f.name = 'kv_cache_tokens' THEN f.value_num END) AS kv_cache_tokens,
       max(CASE WHEN f.section = 'effective' AND f.name = 'context_len' THEN f.value_num END) AS context_len,
       (SELECT count(*) FROM bench_points b WHERE b.run_id = r.run_id) AS bench_points
FROM runs r LEFT JOIN facts f ON f.run_id = r.run_id
GROUP BY ALL ORDER BY r.run_id
"""

EXPORT_TABLES = ("runs", "files", "facts", "runtime", "errors", "http_after_fatal", "bench_points", "requests",
                 "gpu_samples", "probes", "problems", "findings")


def export_parquet(archive: str | Path, out_dir: str | Path) -> dict[str, int]:
    """Write every table as Hive-partitioned Parquet (`table/campaign=NAME/data_0.parquet`).

    The campaign column comes from `runs`; rows of runs without a campaign land in
    `campaign=__none__`. Spark, Trino or DuckDB read the tree with hive partitioning on.
    """
    con = open_archive(archive, read_only=True)
    out = Path(out_dir)
    counts: dict[str, int] = {}
    try:
        existing = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        extra = ("reports",) if "reports" in existing else ()  # created by `forensics report --attach`
        for table in EXPORT_TABLES + extra:
            target = out / table
            if table == "runs":
                src = "SELECT *, coalesce(campaign, '__none__') AS campaign_part FROM runs"
            else:
                src = (f"SELECT t.*, coalesce(r.campaign, '__none__') AS campaign_part FROM {table} t "
                       f"LEFT JOIN runs r USING (run_id)")
            n = con.execute(f"SELECT count(*) FROM ({src})").fetchone()[0]
            counts[table] = n
            if n == 0:
                continue
            target.mkdir(parents=True, exist_ok=True)
            path = str(target).replace("'", "''")
            con.execute(
                f"COPY (SELECT * EXCLUDE (campaign_part), campaign_part AS campaign_p FROM ({src})) "
                f"TO '{path}' (FORMAT parquet, PARTITION_BY (campaign_p), OVERWRITE_OR_IGNORE true)"
            )
            for d in target.iterdir():  # name the partition folders campaign=...
                if d.name.startswith("campaign_p="):
                    d.rename(target / ("campaign=" + d.name[len("campaign_p="):]))
    except duckdb.Error as exc:
        raise ArchiveError("export failed", str(exc).splitlines()[0]) from None
    finally:
        con.close()
    return counts
