"""The findings `forensics scan` proves from one log (forensics/logchecks.py, no DuckDB so a scan
starts fast) must agree with the SQL rules that check the same things in the archive: same
rule id and severity for every corpus log. A rule changed on one side only fails here."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from forensics.cli import cli
from forensics.scan import scan_file

from .conftest import CORPUS

LOGS = sorted(CORPUS.glob("*/*.log"))


def test_scan_findings_match_check_findings(runner, tmp_path: Path) -> None:
    camp = tmp_path / "camp"
    expected = {}
    for log in LOGS:
        run = f"{log.parent.name}-{log.stem}"
        (camp / run).mkdir(parents=True)
        shutil.copy(log, camp / run / "server.log")
        expected[run] = {(f.rule, f.severity) for f in scan_file(log).findings}
    res = runner.invoke(cli, ["check", str(camp), "--format", "json", "--fail-on", "critical"])
    doc = json.loads(res.output)
    got: dict[str, set] = {}
    for f in doc["findings"]:
        got.setdefault(f["run"], set()).add((f["rule"], f["severity"]))
    missing = {run: sorted(want - got.get(run, set())) for run, want in expected.items() if want - got.get(run, set())}
    assert not missing, missing
