"""The rule loader, settings overrides, the signature catalogue and the `rules` / `check` commands."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from forensics import signatures
from forensics.archive import insert_rows, open_archive
from forensics.cli import cli
from forensics.errors import ForensicsError
from forensics.rules import apply_settings, load_rules, parse_header, run_rules, settings

from .conftest import CORPUS, FIXTURES

REQUIRED = {
    "limits.running_below_requested", "load.concurrency_over_slots", "kv.pool_below_load", "kv.no_memory",
    "startup.failed", "engine.died_after_ready", "engine.dead_but_serving", "stream.truncated",
    "bench.prefix_cache_hit", "precision.fp8_uncalibrated", "gpu.throttled", "limits.context_capped",
    "bench.failed_requests", "runtime.preemption",
}


def test_shipped_rules_load_and_cover_the_issue() -> None:
    ids = {r.id for r in load_rules()}
    assert REQUIRED <= ids


def test_header_continuation_lines() -> None:
    text = "-- id: a.b\n-- explanation: first\n--   second\n-- title: t\nSELECT 1"
    header, lines, body = parse_header(text, Path("x.sql"))
    assert header["explanation"] == "first second"
    assert lines["title"] == 4 and body == 5


def _archive(tmp_path: Path) -> Path:
    db = tmp_path / "a.duckdb"
    con = open_archive(db)
    insert_rows(con, "runs", [{"run_id": "r1", "content_hash": "h", "outcome": "ready"},
                              {"run_id": "r2", "content_hash": "h", "outcome": "failed_startup", "log_file": "server.log"}])
    insert_rows(con, "facts", [
        {"run_id": "r1", "section": "requested", "name": "max_running_requests", "value_num": 64,
         "file": "cmd.sh", "line": 2, "raw": "--max-running-requests 64"},
        {"run_id": "r1", "section": "effective", "name": "max_running_requests", "value_num": 25,
         "file": "server.log", "line": 812, "raw": "max_running_requests=25"},
    ])
    insert_rows(con, "errors", [{"run_id": "r2", "ordinal": 0, "type": "ValueError",
                                 "message": "No available memory for the cache blocks.", "file": "server.log",
                                 "line": 120, "raw": "ValueError: No available memory for the cache blocks."}])
    insert_rows(con, "requests", [{"run_id": "r1", "source_file": "b.json", "request_index": 0, "success": True,
                                   "input_tokens": 8000, "ttft_ms": 100.0}])
    con.close()
    return db


def test_set_overrides_a_threshold_on_a_read_only_archive(tmp_path: Path) -> None:
    db = _archive(tmp_path)
    rules = [r for r in load_rules() if r.id == "bench.prefix_cache_hit"]
    con = open_archive(db, read_only=True)
    try:
        assert len(run_rules(con, rules)) == 1  # 8000 tokens / 0.1 s = 80000 tokens/s > 60000 default
    finally:
        con.close()
    con = open_archive(db, read_only=True)
    try:
        apply_settings(con, {"prefix_cache_ceiling_tps": 1e9})
        assert run_rules(con, rules) == []
        assert dict((k, v) for k, v, _ in settings(con))["prefix_cache_ceiling_tps"] == 1e9
    finally:
        con.close()
    con = open_archive(db, read_only=True)
    try:
        apply_settings(con, {"prefix_cache_ceiling_tps": 1000})
        [f] = run_rules(con, rules)
        assert "80000 tokens/s" in f.message and "TTFT 100.0 ms" in f.message
        with pytest.raises(ForensicsError, match="unknown setting"):
            apply_settings(con, {"no_such_key": 1})
    finally:
        con.close()
    con = open_archive(db, read_only=True)  # the file itself is unchanged
    try:
        assert dict((k, v) for k, v, _ in settings(con))["prefix_cache_ceiling_tps"] == 60000
    finally:
        con.close()


# --- signatures -------------------------------------------------------------------------------

def test_every_signature_sample_matches_its_own_signature() -> None:
    for sig in signatures.catalogue():
        for sample in sig.samples:
            got = signatures.match(None, sample)
            assert got is not None and got.id == sig.id, f"{sample!r} -> {got and got.id}, expected {sig.id}"


# Real lines from fixtures/corpus: (log, text in the line, signature id)
CORPUS_LINES = [
    ("vllm/20_2026-runtime-cuda-oom-asyncllm-output-handler.log", "torch.OutOfMemoryError: CUDA out of memory", "cuda_oom"),
    ("vllm/25_2026-illegal-memory-access-after-ready.log", "torch.AcceleratorError: CUDA error: an illegal memory access", "illegal_memory_access"),
    ("sglang/19_mtp-fa3-illegal-memory-access-nccl-watchdog.log", "ProcessGroupNCCL.cpp", "illegal_memory_access"),
    ("vllm/23_v064-compose-no-memory-for-cache-blocks.log", "ValueError: No available memory for the cache blocks", "no_kv_cache_memory"),
    ("vllm/10_2026-max-seq-len-exceeds-kv-valueerror.log", "ValueError: To serve at least one request", "no_kv_cache_memory"),
    ("sglang/02_sm75-qwen2-72b-gptq-tp4-2024.log", "no kernel image is available", "unsupported_combination"),
    ("vllm/19_2026-enginedeaderror-after-ready-apiserver.log", "EngineDeadError: EngineCore encountered", "engine_dead"),
    ("sglang/20_dsr1-dp-decode-hang-watchdog-timeout.log", "Watchdog timeout (self.watchdog_timeout=300)", "engine_dead"),
]

_EXC = re.compile(r"(?P<type>[\w.]*(?:Error|Exception))(?:\s*:\s*|\s+)(?P<message>.*)$")


@pytest.mark.parametrize("log, text, expected", CORPUS_LINES, ids=[c[0] for c in CORPUS_LINES])
def test_signatures_on_real_corpus_lines(log: str, text: str, expected: str) -> None:
    lines = [ln for ln in (CORPUS / log).read_text(encoding="utf-8", errors="replace").splitlines() if text in ln]
    assert lines, f"{log} has no line with {text!r}"
    m = _EXC.search(lines[0])
    typ, msg = (m.group("type"), m.group("message")) if m else (None, lines[0])
    got = signatures.match(typ, msg)
    assert got is not None and got.id == expected, f"{lines[0]!r} -> {got and got.id}"


def test_signatures_on_errors_the_scanner_finds() -> None:
    from forensics.scan import scan_file

    res = scan_file(CORPUS / "vllm" / "23_v064-compose-no-memory-for-cache-blocks.log")
    assert signatures.match(res.errors[0].type, res.errors[0].message).id == "no_kv_cache_memory"


def test_unknown_error_matches_nothing() -> None:
    assert signatures.match("KeyError", "'model.layers.0.weight'") is None
    assert signatures.match(None, None) is None


# --- CLI ----------------------------------------------------------------------------------------

def test_rules_list_and_explain(runner) -> None:
    out = runner.invoke(cli, ["rules"])
    assert out.exit_code == 0
    assert "limits.running_below_requested" in out.output and "warning" in out.output
    out = runner.invoke(cli, ["rules", "explain", "kv.no_memory"])
    assert out.exit_code == 0 and "Remedy:" in out.output
    out = runner.invoke(cli, ["rules", "explain", "no.such_rule"])
    assert out.exit_code == 2 and "no rule `no.such_rule`" in out.output


def test_check_archive_json_and_exit_codes(runner, tmp_path: Path) -> None:
    db = _archive(tmp_path)
    out = runner.invoke(cli, ["check", "--archive", str(db), "--format", "json"])
    assert out.exit_code == 1, out.output  # startup.failed is an error
    doc = json.loads(out.output)
    assert set(doc) == {"schema", "runs", "findings"} and doc["schema"] == "forensics.check/1"
    assert doc["runs"] == ["r1", "r2"]
    by_rule = {f["rule"]: f for f in doc["findings"]}
    f = by_rule["limits.running_below_requested"]
    assert f["message"] == "requested 64 running requests, engine allowed 25"
    assert set(f) == {"rule", "severity", "run", "title", "message", "evidence", "details"}
    assert f["details"] == {"requested": 64, "allowed": 25}  # the header's `evidence:` columns
    assert [e["file"] for e in f["evidence"]] == ["cmd.sh", "server.log"]
    assert by_rule["startup.failed"]["run"] == "r2"
    con = open_archive(db, read_only=True)  # stored, once per run and rule
    assert con.execute("SELECT count(*) FROM findings WHERE rule = 'startup.failed'").fetchone()[0] == 1
    con.close()
    runner.invoke(cli, ["check", "--archive", str(db)])
    con = open_archive(db, read_only=True)
    assert con.execute("SELECT count(*) FROM findings WHERE rule = 'startup.failed'").fetchone()[0] == 1
    con.close()
    assert runner.invoke(cli, ["check", "--archive", str(db), "--fail-on", "critical"]).exit_code == 0
    assert runner.invoke(cli, ["check", "--archive", str(db), "--fail-on", "warning", "--format", "md"]).exit_code == 1


def test_check_usage_and_rule_errors_exit_2(runner, tmp_path: Path) -> None:
    db = _archive(tmp_path)
    out = runner.invoke(cli, ["check", "--archive", str(db), "--set", "nope=1"])
    assert out.exit_code == 2 and "unknown setting" in out.output
    out = runner.invoke(cli, ["check", "--archive", str(db), "--set", "truncated_fraction"])
    assert out.exit_code == 2
    out = runner.invoke(cli, ["check", "--archive", str(db), "--rules", str(FIXTURES / "bad-rules" / "bad-sql")])
    assert out.exit_code == 2 and "bad_sql.sql:" in out.output
    out = runner.invoke(cli, ["check", "--archive", str(tmp_path / "missing.duckdb")])
    assert out.exit_code == 2


def test_check_ingests_run_dirs(runner, tmp_path: Path) -> None:
    pytest.importorskip("forensics.ingest")
    run = tmp_path / "nomem__run1"
    run.mkdir()
    shutil.copy(CORPUS / "vllm" / "23_v064-compose-no-memory-for-cache-blocks.log", run / "server.log")
    out = runner.invoke(cli, ["check", str(run), "--format", "json"])
    assert out.exit_code in (0, 1), out.output
    doc = json.loads(out.output)
    assert doc["runs"] == ["nomem__run1"]
    rules = {f["rule"] for f in doc["findings"]}
    assert "startup.failed" in rules, doc


def test_details_carry_the_declared_columns_and_stay_optional(tmp_path: Path) -> None:
    from forensics.model import Evidence, Finding

    db = _archive(tmp_path)
    con = open_archive(db, read_only=True)
    try:
        rules = load_rules()
        findings = run_rules(con, rules)
    finally:
        con.close()
    by_id = {r.id: r for r in rules}
    for f in findings:
        assert list(f.details) == list(by_id[f.rule].evidence)
        json.dumps(f.as_dict())  # plain JSON values
    hit = next(f for f in findings if f.rule == "bench.prefix_cache_hit")
    assert hit.details == {"hits": 1, "max_rate_tps": 80000.0, "ttft_ms": 100.0, "input_tokens": 8000}
    plain = Finding("a.b", "info", "t", "m", run="r", evidence=[Evidence("f", 1, "x")])
    assert set(plain.as_dict()) == {"rule", "severity", "run", "title", "message", "evidence"}
    md = __import__("forensics.rules", fromlist=["format_check"]).format_check(["r1"], [hit], "md")
    assert "details: `hits` = 1" in md


def test_views_folder_is_not_a_rule_group() -> None:
    from forensics.resources import data_dir
    from forensics.rules import rule_files

    root = data_dir("rules")
    assert (root / "views" / "clean_stats.sql").exists()
    assert all(p.relative_to(root).parts[0] != "views" for p in rule_files(root))
