"""The CLI on real and hostile inputs: exact exit codes, one-line errors, no tracebacks."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli import cli

from .conftest import CORPUS

OOM_LOG = CORPUS / "vllm" / "20_2026-runtime-cuda-oom-asyncllm-output-handler.log"


def _json(runner, *args: str) -> dict:
    result = runner.invoke(cli, ["scan", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_scan_json_follows_the_contract(runner) -> None:
    doc = _json(runner, str(OOM_LOG))
    assert doc["schema"] == "forensics.scan/1"
    assert set(doc) >= {"source", "engine", "engine_version", "model", "outcome", "requested",
                        "effective", "runtime", "errors", "findings"}
    assert doc["engine"] == "vllm"
    for section in ("requested", "effective", "runtime"):
        for fact in doc[section].values():
            assert set(fact) >= {"value", "unit", "file", "line", "raw", "rank"}
    for err in doc["errors"]:
        assert set(err) >= {"type", "message", "file", "line", "rank", "raw"}


@pytest.mark.parametrize("fmt", ["table", "md", "json"])
def test_every_format_renders(runner, fmt: str) -> None:
    result = runner.invoke(cli, ["scan", "--format", fmt, str(OOM_LOG)])
    assert result.exit_code == 0, result.output
    assert "outcome" in result.output


def test_gzip_zstd_and_stdin_read_the_same_facts(runner, tmp_path: Path) -> None:
    import zstandard

    raw = OOM_LOG.read_bytes()
    gz = tmp_path / "server.log.gz"
    gz.write_bytes(gzip.compress(raw))
    zst = tmp_path / "server.log.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(raw))
    plain = _json(runner, str(OOM_LOG))
    for path in (gz, zst):
        doc = _json(runner, str(path))
        assert doc["outcome"] == plain["outcome"]
        assert {k: v["value"] for k, v in doc["effective"].items()} == {k: v["value"] for k, v in plain["effective"].items()}
    result = runner.invoke(cli, ["scan", "--format", "json", "-"], input=raw)
    assert result.exit_code == 0
    assert json.loads(result.output)["source"] == "<stdin>"
    assert json.loads(result.output)["outcome"] == plain["outcome"]


def test_windows_line_ends_and_bad_bytes_change_nothing(runner, tmp_path: Path) -> None:
    raw = OOM_LOG.read_bytes()
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(raw.replace(b"\n", b"\r\n").replace(b"INFO", b"INFO\xff", 1))
    a, b = _json(runner, str(OOM_LOG)), _json(runner, str(crlf))
    assert a["outcome"] == b["outcome"]
    assert [e["type"] for e in a["errors"]] == [e["type"] for e in b["errors"]]


@pytest.mark.parametrize("case", ["missing", "directory", "binary"])
def test_bad_input_is_one_line_error_exit_2(runner, tmp_path: Path, case: str) -> None:
    if case == "missing":
        target = tmp_path / "nope.log"
    elif case == "directory":
        target = tmp_path
    else:
        target = tmp_path / "a.out"
        target.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 40)
    result = runner.invoke(cli, ["scan", str(target)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output


def test_empty_file_is_unknown_not_an_error(runner, tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    doc = _json(runner, str(empty))
    assert doc["outcome"] == "unknown" and doc["effective"] == {} and doc["errors"] == []


def test_fifty_megabyte_single_line_does_not_crash(runner, tmp_path: Path) -> None:
    big = tmp_path / "one-line.log"
    with big.open("wb") as fh:
        fh.write(b"INFO 01-01 00:00:00 [x.py:1] ")
        fh.write(b"a" * (50 << 20))
    result = runner.invoke(cli, ["scan", "--format", "json", str(big)])
    assert result.exit_code == 0
    assert json.loads(result.output)["outcome"] == "unknown"


def test_no_traceback_from_the_installed_command(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("forensics")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    proc = subprocess.run([str(exe), "scan", str(junk)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr


def test_cmd_file_beside_the_log_is_the_request(runner, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(OOM_LOG.read_bytes())
    (tmp_path / "cmd.sh").write_text("#!/bin/sh\nvllm serve /models/x \\\n  --max-num-seqs 64 \\\n  --max-model-len=32768\n")
    doc = _json(runner, str(log))
    assert doc["requested"]["max_num_seqs"]["value"] == 64
    assert doc["requested"]["max_num_seqs"]["line"] == 3
    assert doc["requested"]["max_model_len"]["value"] == 32768
    assert doc["requested"]["max_num_seqs"]["file"].endswith("cmd.sh")


def test_parsers_check_lists_patterns(runner) -> None:
    result = runner.invoke(cli, ["parsers", "--check"])
    assert result.exit_code == 0
    assert "all samples match as stated" in result.output


def test_unmatched_groups_fact_like_lines(runner, tmp_path: Path) -> None:
    log = tmp_path / "drift.log"
    log.write_text(
        "(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [x.py:1] Frobnicated KV pool: 1,234 tokens in 5.5 s\n"
        "(EngineCore_DP0 pid=1) INFO 01-01 00:00:01 [x.py:1] Frobnicated KV pool: 99 tokens in 0.5 s\n"
        "hello world\n")
    result = runner.invoke(cli, ["scan", "--unmatched", "--format", "json", str(log)])
    assert result.exit_code == 0
    groups = json.loads(result.output)
    assert groups[0]["template"] == "Frobnicated KV pool: <N> tokens in <N> s"
    assert groups[0]["count"] == 2 and groups[0]["first_line"] == 1


def test_scan_progress_counts_every_byte_and_shows_only_on_a_terminal(tmp_path: Path, monkeypatch) -> None:
    import io

    from forensics import cli as cli_mod
    from forensics.scan import scan_file

    src = CORPUS / "vllm" / "04_v1-small-model-kv-tokens-progressbars.log"
    log = tmp_path / "big.log"
    log.write_bytes(src.read_bytes() * 2500)  # ~3 MB: past SMALL, so the RE2 path's chunks are counted
    seen: list[int] = []
    scan_file(log, on_progress=seen.append)
    assert sum(seen) == log.stat().st_size and len(seen) >= 2
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(log.read_bytes()))

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(cli_mod, "PROGRESS_MIN", 1 << 20)
    monkeypatch.setattr(cli_mod.sys, "stderr", Tty())
    assert cli_mod._progress_size(str(log)) == log.stat().st_size
    assert cli_mod._progress_size(str(gz)) is None          # compressed: its size is not what is read
    assert cli_mod._progress_size(str(src)) is None         # small: over before a bar helps
    monkeypatch.setattr(cli_mod.sys, "stderr", io.StringIO())
    assert cli_mod._progress_size(str(log)) is None         # not a terminal: no bar
