"""`forensics gpu-summary`: gpu_samples rows in a real DuckDB archive, per benchmark window."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from forensics.archive import insert_rows, open_archive
from forensics.cli import cli
from forensics.errors import ForensicsError
from forensics.gpusummary import NO_TIME, NO_WINDOW, gpu_summary

from .conftest import FIXTURES


def _sample(run: str, gpu: int, ts: float, line: int, temp: float, clock: float, **reasons: bool) -> dict:
    row = {"run_id": run, "source_file": f"{run}/gpu.parquet", "line": line, "source_tool": "forensics sample",
           "ts_utc": ts, "gpu_index": gpu, "name": "NVIDIA H100 80GB HBM3", "temperature_c": temp,
           "sm_clock_mhz": clock, "sm_clock_max_mhz": 1980.0}
    for r in ("gpu_idle", "sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"):
        row[f"reason_{r}"] = reasons.get(r, False)
    return row


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    db = tmp_path / "a.duckdb"
    con = open_archive(db)
    insert_rows(con, "runs", [{"run_id": "win", "content_hash": "h"}, {"run_id": "nowin", "content_hash": "h"}])
    # two points: [990, 1000] and [1010, 1015]
    insert_rows(con, "bench_points", [
        {"run_id": "win", "source_file": "win/bench.json", "point_index": 0, "line": 1, "ts_end_utc": 1000.0, "duration_s": 10.0},
        {"run_id": "win", "source_file": "win/bench.json", "point_index": 1, "line": 2, "ts_end_utc": 1015.0, "duration_s": 5.0},
        {"run_id": "nowin", "source_file": "nowin/bench.json", "point_index": 0, "line": 1, "duration_s": 5.0},
    ])
    rows = []
    line = 1
    for t in range(985, 1021):  # one sample a second per GPU, 985 .. 1020
        for gpu in (0, 1):
            hot = gpu == 0 and 994 <= t <= 997
            capped = gpu == 1 and t in (1011, 1012)
            rows.append(_sample("win", gpu, float(t), line, 88.0 if hot else 60.0 + gpu + (t % 3),
                                1410.0 if hot else 1980.0 - (t % 2) * 15, hw_thermal=hot, sw_thermal=hot,
                                sw_power_cap=capped))
            line += 1
    # half-second sampling, no window known
    rows += [_sample("nowin", 0, 100.0 + i / 2, i + 1, 50.0 + i, 1800.0 + i, sw_power_cap=i % 2 == 1) for i in range(6)]
    insert_rows(con, "gpu_samples", rows)
    con.close()
    return db


def _gpus(window) -> dict:
    return {g["gpu"]: g for g in window.gpus}


def test_per_window_per_gpu(archive: Path) -> None:
    con = open_archive(archive, read_only=True)
    try:
        res = gpu_summary(con, "win")
        assert res.windowed and res.note is None and res.samples == 72
        w0, w1 = res.windows
        assert (w0.point_index, w0.t0, w0.t1, w1.t0, w1.t1) == (0, 990.0, 1000.0, 1010.0, 1015.0)
        g0, g1 = _gpus(w0)["0"], _gpus(w0)["1"]
        assert g0["samples"] == 11 and g1["samples"] == 11      # 990 .. 1000 inclusive
        assert g0["max_temperature_c"] == 88
        assert (g0["sm_clock_min_mhz"], g0["sm_clock_max_mhz"]) == (1410, 1980)
        assert g0["interval_s"] == 1
        assert g0["reasons"]["hw_thermal"] == {"samples": 4, "seconds": 4}
        assert g0["reasons"]["sw_thermal"] == {"samples": 4, "seconds": 4}
        assert g0["reasons"]["sw_power_cap"] == {"samples": 0, "seconds": 0}
        assert g1["reasons"]["hw_thermal"]["samples"] == 0
        assert g1["max_temperature_c"] == 63                  # 60 + 1 + 2
        assert (g1["sm_clock_min_mhz"], g1["sm_clock_max_mhz"]) == (1965, 1980)
        h0, h1 = _gpus(w1)["0"], _gpus(w1)["1"]
        assert h0["samples"] == 6 and h0["reasons"]["hw_thermal"]["samples"] == 0
        assert h1["reasons"]["sw_power_cap"] == {"samples": 2, "seconds": 2}
        assert h0["max_temperature_c"] == 62
    finally:
        con.close()


def test_no_window_uses_all_samples_and_says_so(archive: Path) -> None:
    con = open_archive(archive, read_only=True)
    try:
        res = gpu_summary(con, "nowin")
        assert not res.windowed and res.note == NO_WINDOW
        [w] = res.windows
        [g] = w.gpus
        assert g["samples"] == 6 and g["max_temperature_c"] == 55 and g["interval_s"] == 0.5
        assert (g["sm_clock_min_mhz"], g["sm_clock_max_mhz"]) == (1800, 1805)
        assert g["reasons"]["sw_power_cap"] == {"samples": 3, "seconds": 1.5}
        with pytest.raises(ForensicsError, match="no run"):
            gpu_summary(con, "missing")
    finally:
        con.close()


def test_gpu_summary_cli(runner, archive: Path, tmp_path: Path) -> None:
    out = runner.invoke(cli, ["gpu-summary", "win", "--archive", str(archive)])
    assert out.exit_code == 0, out.output
    row = next(ln for ln in out.output.splitlines() if ln.startswith("point 0") and ln.split()[2] == "0")
    assert "88" in row and "1410-1980" in row and "hw_thermal 4 s" in row and "sw_thermal 4 s" in row
    out = runner.invoke(cli, ["gpu-summary", "nowin", "--archive", str(archive), "--format", "json"])
    doc = json.loads(out.output)
    assert doc["schema"] == "forensics.gpu-summary/1" and doc["windowed"] is False and doc["note"] == NO_WINDOW
    # a run folder with nvidia-smi CSV telemetry that has no timestamps: windows known, samples outside them
    run = tmp_path / "smi__run"
    run.mkdir()
    shutil.copy(FIXTURES / "results" / "nvidia-smi_query-gpu_csv_with_units_bpytop_issue26.csv", run / "gpu.csv")
    out = runner.invoke(cli, ["gpu-summary", str(run), "--format", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["run_id"] == "smi__run" and doc["samples"] == 2 and doc["windowed"] is False
    temps = sorted(g["max_temperature_c"] for g in doc["windows"][0]["gpus"])
    assert temps == [49, 60]
    # the demo run: benchmark windows known, nvidia-smi CSV samples without a time
    out = runner.invoke(cli, ["gpu-summary", str(FIXTURES / "runs" / "demo-campaign" / "llama8b__tp1__vllm__0001")])
    assert out.exit_code == 0, out.output
    assert NO_TIME in out.output.splitlines()[0]
    assert sum(1 for ln in out.output.splitlines() if ln.startswith("all samples")) == 2
    bad = runner.invoke(cli, ["gpu-summary", "missing", "--archive", str(archive)])
    assert bad.exit_code == 2
