"""`forensics report`: golden Markdown reports of real-format failed runs, attach, and HTML in Chromium."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from forensics.cli import cli

from .regen_reports import CASES, GOLDEN, make_run, render_case

VERDICTS = {
    "vllm-negative-kv": "Never became ready: EngineCore failed to start (on EngineCore_0); top finding kv.no_memory: KV cache memory is -2.14 GiB.",
    "vllm-max-seq-len": "Never became ready: ValueError on EngineCore: To serve at least one request with the model's max seq len (65536)",
    "vllm-oom-after-ready": "Crashed after it was ready: torch.OutOfMemoryError on EngineCore: CUDA out of memory.",
    "sglang-dead-but-serving": "Died after it was ready but kept serving (3 HTTP 200 response(s) after the fatal error at line 4",
    "capacity-limited-sweep": "Outcome unknown: the log shows neither a ready server nor a startup failure; top finding bench.failed_requests",
}
SECTIONS = ["## Launch timeline", "## Running, waiting and KV usage", "## Requested vs effective", "## Findings",
            "## Benchmark points", "## GPU state per benchmark window"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_matches_golden(tmp_path: Path, case: str) -> None:
    text = render_case(tmp_path, case)
    golden = (GOLDEN / f"{case}.md").read_text(encoding="utf-8")
    assert text == golden, f"fixtures/reports/{case}.md is stale: run `python -m tests.regen_reports` and review the diff"
    assert text.splitlines()[2].startswith("**Verdict:** " + VERDICTS[case])
    for s in SECTIONS:
        assert s in text


def test_capacity_sweep_sections(tmp_path: Path) -> None:
    text = render_case(tmp_path, "capacity-limited-sweep")
    # requested 256 vs effective 1, marked
    assert "| **max_running_requests** | **256** | **capacity-limited-sweep/cmd.sh:5** | **≠** | **max_running_requests** | **1 requests**" in text
    assert "WARNING load.concurrency_over_slots" in text and "WARNING limits.running_below_requested" in text
    assert "Remedy: Compare points only up to the cap" in text
    # the benchmark point at concurrency 4 is over the single running slot
    assert "| **aiperf** | **4** | **1** | **813** | **over slots** |" in text
    # evidence quoted with context, secrets from cmd.sh redacted
    assert "> 5    --mem-fraction-static 0.85 --context-length 8192 --max-running-requests 256" in text
    assert "hf_FakeToken" not in text and "sk-test" not in text and "***REDACTED***" in text


def test_failed_startup_timeline_quotes_lines(tmp_path: Path) -> None:
    text = render_case(tmp_path, "vllm-negative-kv")
    assert "| KV cache allocated | 7 | EngineCore_0 | kv_cache_gib=-2.14 GiB |" in text
    assert "| **fatal error** | **8** |" in text
    assert "> 7  (EngineCore_0 pid=5839) INFO 08-20 18:04:22 [gpu_worker.py:276] Available KV cache memory: -2.14 GiB" in text


def test_cli_report_folder_and_attach(tmp_path: Path, runner) -> None:
    run = make_run(tmp_path / "runs", "capacity-limited-sweep")
    res = runner.invoke(cli, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("# Diagnosis: capacity-limited-sweep")
    db = tmp_path / "a.duckdb"
    res = runner.invoke(cli, ["report", str(run), "--archive", str(db), "--attach"])
    assert res.exit_code == 0, res.output
    assert (run / "diagnosis.md").read_text().startswith("# Diagnosis: capacity-limited-sweep")
    assert "<svg" in (run / "diagnosis.html").read_text() or "No GPU" in (run / "diagnosis.html").read_text()
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT run_id, format, verdict FROM reports ORDER BY format").fetchall()
    con.close()
    assert [(r[0], r[1]) for r in rows] == [("capacity-limited-sweep", "html"), ("capacity-limited-sweep", "md")]
    assert rows[0][2].startswith("Outcome unknown")
    # by id from the archive, as HTML into a file
    out = tmp_path / "r.html"
    res = runner.invoke(cli, ["report", "capacity-limited-sweep", "--archive", str(db), "--format", "html", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_cli_report_unknown_run(tmp_path: Path, runner) -> None:
    db = tmp_path / "a.duckdb"
    runner.invoke(cli, ["ingest", str(make_run(tmp_path / "runs", "vllm-negative-kv")), "--archive", str(db)])
    res = runner.invoke(cli, ["report", "nope", "--archive", str(db)])
    assert res.exit_code == 2
    assert "Error: no run `nope` in the archive" in res.output


def _html_case(tmp_path: Path, runner) -> Path:
    """The dead-but-serving run plus GPU telemetry from the sampler on a throttling fake fleet."""
    run = make_run(tmp_path / "runs", "sglang-dead-but-serving")
    fleet = Path(__file__).resolve().parent.parent / "fixtures" / "nvml" / "l4rz-3-sw-power-cap-a100.toml"
    res = runner.invoke(cli, ["sample", "--fake-fleet", str(fleet), "--interval", "100ms", "--out",
                              str(run / "gpu.parquet"), "--", "sleep", "1"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "report.html"
    res = runner.invoke(cli, ["report", str(run), "--format", "html", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_html_is_self_contained(tmp_path: Path, runner) -> None:
    html = _html_case(tmp_path, runner).read_text()
    assert "<script" not in html.lower()
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    assert html.count("<svg") == 2
    assert 'class="marker-fatal-error"' in html and 'class="throttle"' in html


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"]


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed (Debian: apt-get install -y chromium)")
def test_html_renders_charts_in_chromium(tmp_path: Path, runner) -> None:
    html = _html_case(tmp_path, runner)
    base = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*base, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert dom.count("<svg") == 2 and "<polyline" in dom and 'class="throttle"' in dom
    shot = tmp_path / "shot.png"
    subprocess.run([*base, "--window-size=1200,3000", f"--screenshot={shot}", html.as_uri()],
                   capture_output=True, timeout=120, cwd=tmp_path)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 50_000  # a blank page compresses to a few KB
