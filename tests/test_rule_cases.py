"""Every rule against its TOML cases: real DuckDB file, rows in, reopen read-only, run the rule."""
from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

import pytest

from forensics.archive import insert_rows, open_archive
from forensics.errors import RuleSpecError
from forensics.model import SEVERITIES
from forensics.resources import data_dir
from forensics.rules import apply_settings, load_rules, rule_files, run_rule

from .conftest import FIXTURES

RULES_DIR = data_dir("rules")
BAD_RULES = FIXTURES / "bad-rules"


@lru_cache(maxsize=1)
def _rules() -> dict[str, object]:
    return {r.path.resolve(): r for r in load_rules()}


def _case_file(sql: Path) -> Path:
    return sql.with_suffix(".cases.toml")


def _all_cases() -> list:
    out = []
    for sql in rule_files(RULES_DIR):
        cf = _case_file(sql)
        if not cf.exists():
            continue
        doc = tomllib.loads(cf.read_text(encoding="utf-8"))
        for case in doc.get("case", []):
            rid = f"{sql.parent.name}.{sql.stem}"
            out.append(pytest.param(sql, case, id=f"{rid}::{case.get('name', '?')}"))
    return out


def _run_case(tmp_path: Path, sql: Path, case: dict) -> list:
    rule = _rules()[sql.resolve()]
    db = tmp_path / "archive.duckdb"
    con = open_archive(db)
    try:
        for table, rows in case.get("tables", {}).items():
            if table == "runs":
                rows = [{"content_hash": "test", **r} for r in rows]
            insert_rows(con, table, rows)
    finally:
        con.close()
    con = open_archive(db, read_only=True)
    try:
        apply_settings(con, case.get("settings", {}))
        return run_rule(con, rule)
    finally:
        con.close()


@pytest.mark.parametrize("sql, case", _all_cases())
def test_rule_case(tmp_path: Path, sql: Path, case: dict) -> None:
    assert "expect" in case, f"{_case_file(sql)}: case {case.get('name')!r} has no `expect`"
    findings = _run_case(tmp_path, sql, case)
    left = list(findings)
    for exp in case["expect"]:
        match = next((f for f in left if f.run == exp["run_id"]
                      and exp.get("message_contains", "") in f.message
                      and exp.get("severity", f.severity) == f.severity), None)
        assert match is not None, f"expected {exp}, got {[(f.run, f.severity, f.message) for f in findings]}"
        left.remove(match)
    assert not left, f"unexpected findings: {[(f.run, f.message) for f in left]}"
    for f in findings:
        assert f.severity in SEVERITIES
        assert f.evidence, f"{f.rule} returned a finding without evidence"
        assert all(e.file for e in f.evidence), f"{f.rule}: evidence without a file: {f.evidence}"


def test_every_rule_has_firing_and_quiet_cases() -> None:
    problems = []
    for sql in rule_files(RULES_DIR):
        cf = _case_file(sql)
        if not cf.exists():
            problems.append(f"{sql}: no {cf.name}")
            continue
        cases = tomllib.loads(cf.read_text(encoding="utf-8")).get("case", [])
        if not any(c.get("expect") for c in cases):
            problems.append(f"{cf}: no case that fires")
        if not any(c.get("expect") == [] for c in cases):
            problems.append(f"{cf}: no case with `expect = []`")
        names = [c.get("name") for c in cases]
        if None in names or len(set(names)) != len(names):
            problems.append(f"{cf}: every case needs a unique `name`")
    assert not problems, "\n".join(problems)


def test_no_stray_case_files() -> None:
    for cf in RULES_DIR.rglob("*.cases.toml"):
        assert cf.with_name(cf.name.replace(".cases.toml", ".sql")).exists(), f"{cf} has no rule"


BAD = {
    "missing-header-key": ("remedy", "rule header incomplete"),
    "two-statements": ("2 statements", "exactly one statement"),
    "bad-sql": ("no_such_column", "fails on the empty archive"),
    "missing-evidence-column": ("`evidence`", "lacks a column"),
    "declared-column-missing": ("`allowed`", "lacks a column"),
    "evidence-wrong-type": ("LIST of STRUCT", "wrong type"),
    "id-mismatch": ("must be `broken.id_mismatch`", "id does not match"),
    "not-a-select": ("INSERT", "must be a SELECT"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_broken_rule_is_an_error_naming_the_file(case: str) -> None:
    why, what = BAD[case]
    folder = BAD_RULES / case
    files = rule_files(folder)
    assert len(files) == 1
    with pytest.raises(RuleSpecError) as info:
        load_rules([folder], shipped=False)
    err = info.value
    assert what in err.what
    assert why in err.why
    assert str(files[0]) in err.where
    assert err.where.split(":")[1].isdigit(), err.where  # file:line


def test_bad_sql_error_points_at_the_failing_line() -> None:
    with pytest.raises(RuleSpecError) as info:
        load_rules([BAD_RULES / "bad-sql"], shipped=False)
    path = rule_files(BAD_RULES / "bad-sql")[0]
    line = int(info.value.where.split(":")[1])
    assert "no_such_column" in path.read_text().splitlines()[line - 1]
