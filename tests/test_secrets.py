"""Secrets in launch commands and logs never leave: not in scan output, not in the archive."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from forensics.cli import cli
from forensics.ingest import ingest_paths

TOKEN = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm123456"
KEY = "sk-" + "live0123456789abcdefABCDEF"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "camp" / "run1"
    d.mkdir(parents=True)
    (d / "cmd.sh").write_text(f"#!/bin/bash\nexport HF_TOKEN={TOKEN}\nvllm serve m \\\n  --api-key {KEY} \\\n  --max-num-seqs 8\n")
    (d / "server.log").write_text(
        "(APIServer pid=1) INFO 10-10 11:00:00 [utils.py:233] non-default args: "
        f"{{'model_tag': 'm', 'api_key': ['{KEY}'], 'max_num_seqs': 8}}\n"
        f"(APIServer pid=1) ERROR 10-10 11:00:05 [x.py:1] ValueError: bad header Authorization: Bearer {KEY}\n")
    return d


@pytest.mark.parametrize("fmt", ["json", "table", "md"])
def test_scan_output_has_no_secret(runner, run_dir: Path, fmt: str) -> None:
    res = runner.invoke(cli, ["scan", "--format", fmt, str(run_dir / "server.log")])
    assert res.exit_code == 0, res.output
    assert KEY not in res.output and TOKEN not in res.output
    assert "***REDACTED***" in res.output


def test_archive_never_stores_a_secret(run_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    ingest_paths(db, [run_dir.parent])
    con = duckdb.connect(str(db), read_only=True)
    try:
        for table in ("facts", "errors", "files", "runs"):
            for row in con.execute(f"SELECT * FROM {table}").fetchall():
                text = " ".join(str(v) for v in row)
                assert KEY not in text and TOKEN not in text, (table, text)
        assert con.execute("SELECT value_text FROM facts WHERE section='requested' AND name='api_key' "
                           "AND file LIKE '%cmd.sh'").fetchone() == ("***REDACTED***",)
    finally:
        con.close()
