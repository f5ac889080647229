"""GPU sampler without a GPU: fake fleets through the sampler, a fake pynvml through the gate, the CLI."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pyarrow.parquet as pq
import pynvml  # only for its constants and error classes; forensics itself imports it in gpu/nvml.py only
import pytest
from hypothesis import given
from hypothesis import strategies as st

from forensics.cli import cli
from forensics.errors import GpuUnavailable, InputError
from forensics.gpu import sampler
from forensics.gpu.nvml import METRICS, STATUSES, Nvml, status_of_code
from tests.fake_nvml import FLEETS, FakeNvml

ROOT = Path(__file__).resolve().parent.parent

# reason_<name> -> suffix of pynvml's nvmlClocksEventReason*/nvmlClocksThrottleReason* constant
PYNVML_REASON = {
    "gpu_idle": "GpuIdle", "applications_clocks": "ApplicationsClocksSetting", "sw_power_cap": "SwPowerCap",
    "hw_slowdown": "HwSlowdown", "sync_boost": "SyncBoost", "sw_thermal": "SwThermalSlowdown",
    "hw_thermal": "HwThermalSlowdown", "hw_power_brake": "HwPowerBrakeSlowdown", "display_clocks": "DisplayClockSetting",
}


def run_fleet(tmp_path, fleet: str, ticks: int):
    fake = FakeNvml(fleet)
    out = tmp_path / "gpu.parquet"
    s = sampler.Session(fake, out, interval=0.001)
    assert s.run(max_ticks=ticks) == 0
    assert not sampler.journal_path(out).exists()
    return fake, s, pq.read_table(out).to_pylist()


# --- decoding -----------------------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["nvmlClocksEventReason", "nvmlClocksThrottleReason"])
def test_reason_bits_match_pynvml_constants(prefix):
    assert [r for r, _ in sampler.REASONS] == list(PYNVML_REASON)
    for name, bit in sampler.REASONS:
        assert getattr(pynvml, prefix + PYNVML_REASON[name]) == bit, name


def test_status_codes_match_pynvml_constants():
    assert status_of_code(pynvml.NVML_ERROR_NOT_SUPPORTED) == "not_supported"
    assert status_of_code(pynvml.NVML_ERROR_NO_PERMISSION) == "no_permission"
    assert status_of_code(pynvml.NVML_ERROR_GPU_IS_LOST) == "gpu_lost"
    assert status_of_code(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND) == "function_not_found"
    assert status_of_code(pynvml.NVML_ERROR_DRIVER_NOT_LOADED) == "no_driver"
    assert status_of_code(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND) == "no_driver"
    assert status_of_code(pynvml.NVML_ERROR_UNKNOWN) == "unknown_error"


@given(st.integers(min_value=0, max_value=0x1FF))
def test_decode_reasons_round_trips(mask):
    decoded = sampler.decode_reasons(mask)
    assert sum(bit for r, bit in sampler.REASONS if decoded[f"reason_{r}"]) == mask


def test_decode_reasons_null_mask_is_null():
    assert set(sampler.decode_reasons(None).values()) == {None}


def test_parse_interval():
    assert sampler.parse_interval("1s") == 1.0
    assert sampler.parse_interval("500ms") == 0.5
    assert sampler.parse_interval("2m") == 120.0
    assert sampler.parse_interval("0.25") == 0.25
    for bad in ("0s", "-1s", "fast", "inf"):
        with pytest.raises(InputError):
            sampler.parse_interval(bad)


# --- fake fleets --------------------------------------------------------------------------

def test_every_fleet_loads_and_cites_its_issue():
    fleets = sorted(FLEETS.glob("*.toml"))
    assert len(fleets) >= 5
    for f in fleets:
        fake = FakeNvml(f)  # refuses a GPU that neither gives nor states a metric
        assert fake.fleet["fleet"]["scenario"] == f.stem
        assert f.stem.startswith("bench-") or fake.fleet["fleet"]["issues"], f


def test_missing_metrics_are_null_plus_status(tmp_path):
    _, s, rows = run_fleet(tmp_path, "gpustat-83-mixed-fleet-missing-metrics", 3)
    assert len(rows) == 9
    by_gpu = {g: [r for r in rows if r["gpu_index"] == g] for g in range(3)}
    for r in by_gpu[0]:
        assert r["power_w"] is not None and r["power_w_status"] is None
        assert all(r[f"{m}_status"] is None for m in METRICS)
    for r in by_gpu[1]:
        assert (r["power_w"], r["power_w_status"]) == (None, "not_supported")
        assert (r["power_limit_w"], r["power_limit_w_status"]) == (None, "not_supported")
        assert r["temperature_c"] == 45 and r["gpu_status"] == "ok"
    for r in by_gpu[2]:
        assert (r["temperature_c"], r["temperature_c_status"]) == (None, "no_permission")
        assert (r["util_gpu_pct"], r["util_gpu_pct_status"]) == (None, "not_supported")
        assert (r["violation_power_ns"], r["violation_power_ns_status"]) == (None, "function_not_found")
        assert r["clock_event_reasons"] is None and r["reason_gpu_idle"] is None
    assert [r["util_gpu_pct"] for r in by_gpu[0]] == [80, 90, 100]
    assert s.tally.missing_functions == {"nvmlDeviceGetViolationStatus"}
    # never a sentinel: every status is a known one, no -1 / 0xFFFFFFFF anywhere
    for r in rows:
        assert all(r[f"{m}_status"] in (None, *STATUSES) for m in METRICS)
        assert not {v for v in r.values() if isinstance(v, int) and not isinstance(v, bool)} & {-1, 0xFFFFFFFF}


def test_lost_gpu_mid_run_keeps_the_others(tmp_path):
    fake, s, rows = run_fleet(tmp_path, "nvitop-139-gpu-lost-mid-run", 6)
    assert len(rows) == 24
    lost = [r for r in rows if r["gpu_index"] == 1]
    assert [r["gpu_status"] for r in lost] == ["ok"] * 3 + ["gpu_lost"] * 3
    for r in lost[3:]:
        assert r["uuid"] == "GPU-3090-1111"
        assert all(r[m] is None and r[f"{m}_status"] == "gpu_lost" for m in METRICS)
    others = [r for r in rows if r["gpu_index"] != 1]
    assert len(others) == 18 and all(r["gpu_status"] == "ok" and r["power_w"] == 31.0 for r in others)
    assert fake.reads[(1, None)] == 4  # not queried again once lost
    assert s.tally.lost == {(1, None)}


def test_mig_devices_are_enumerated_and_record_what_they_lack(tmp_path):
    _, _, rows = run_fleet(tmp_path, "gpustat-102-mig-enabled-a100", 2)
    keys = sorted({(r["gpu_index"], r["mig_index"] if r["mig_index"] is not None else -1) for r in rows})
    assert keys == [(0, -1), (0, 0), (0, 1), (1, -1)]
    mig = [r for r in rows if r["mig_index"] is not None]
    for r in mig:
        assert r["uuid"].startswith("MIG-") and r["mem_total_mib"] == 40192 and r["mem_used_mib_status"] is None
        assert (r["sm_clock_mhz"], r["sm_clock_mhz_status"]) == (None, "not_supported")
        assert (r["power_w"], r["power_w_status"]) == (None, "not_supported")
    parent = [r for r in rows if r["gpu_index"] == 0 and r["mig_index"] is None]
    assert all(r["util_gpu_pct_status"] == "not_supported" and r["power_w"] == 87.0 for r in parent)


def test_throttle_bits_are_decoded(tmp_path):
    _, _, rows = run_fleet(tmp_path, "l4rz-3-sw-power-cap-a100", 3)
    g = {i: [r for r in rows if r["gpu_index"] == i] for i in range(3)}
    assert all(r["reason_sw_power_cap"] and not r["reason_hw_slowdown"] for r in g[0])
    assert [r["violation_power_ns"] for r in g[0]] == [1_000_000_000, 2_000_000_000, 3_000_000_000]
    assert all(r["clock_event_reasons"] == 0x48 and r["reason_hw_slowdown"] and r["reason_hw_thermal"] for r in g[1])
    assert all(r["reason_gpu_idle"] and not r["reason_sw_power_cap"] for r in g[2])


def test_a_leftover_journal_is_never_clobbered(tmp_path):
    out = tmp_path / "gpu.parquet"
    sampler.journal_path(out).write_text("{}\n")
    with pytest.raises(InputError, match="--recover"):
        sampler.Session(FakeNvml("bench-8x-h100"), out, 0.01).run(max_ticks=1)


# --- the gate, over a fake pynvml module ----------------------------------------------------

def fake_pynvml(**functions):
    """A module-like object with pynvml's constants and error classes and the given functions."""
    mod = types.SimpleNamespace(**{k: getattr(pynvml, k) for k in dir(pynvml) if k.startswith(("NVML_", "NVMLError"))})
    mod.nvmlInit = lambda: None
    mod.nvmlShutdown = lambda: None
    for k, v in functions.items():
        setattr(mod, k, v)
    return mod


def raises(exc_class):
    def f(*_args):
        raise exc_class()
    return f


@pytest.mark.parametrize("error", [pynvml.NVMLError_LibraryNotFound, pynvml.NVMLError_DriverNotLoaded])
def test_no_driver_is_one_line_gpu_unavailable(error):
    gate = Nvml(fake_pynvml(nvmlInit=raises(error)))
    with pytest.raises(GpuUnavailable) as info:
        gate.devices()
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith("NVML could not initialise: ")
    assert "nvidia-smi" in text


def test_no_driver_message_exactly():
    with pytest.raises(GpuUnavailable) as info:
        Nvml(fake_pynvml(nvmlInit=raises(pynvml.NVMLError_LibraryNotFound))).init()
    assert str(info.value) == ("NVML could not initialise: no NVIDIA driver found (libnvidia-ml.so.1 cannot be "
                               "loaded); install the driver or run where `nvidia-smi` works")


def test_cli_without_driver_prints_one_error_line(runner, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(nvmlInit=raises(pynvml.NVMLError_LibraryNotFound)))
    monkeypatch.delenv("FORENSICS_FAKE_NVML", raising=False)
    res = runner.invoke(cli, ["sample", "--out", str(tmp_path / "gpu.parquet"), "--", sys.executable, "-c", "pass"])
    assert res.exit_code == 2
    assert res.stderr == ("Error: NVML could not initialise: no NVIDIA driver found (libnvidia-ml.so.1 cannot be "
                          "loaded); install the driver or run where `nvidia-smi` works\n")
    assert list(tmp_path.iterdir()) == []  # nothing written, the command never started


def test_pynvml_is_imported_lazily_and_only_by_the_gate():
    code = "import sys, forensics.cli, forensics.gpu.sampler; print('pynvml' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
    importers = [p.relative_to(ROOT).as_posix() for p in (ROOT / "forensics").rglob("*.py")
                 if "import pynvml" in p.read_text() or "from pynvml" in p.read_text()]
    assert importers == ["forensics/gpu/nvml.py"]


def test_gate_maps_errors_sentinels_and_fallbacks():
    util = types.SimpleNamespace(gpu=97, memory=41)
    mem = types.SimpleNamespace(used=3 << 30, total=80 << 30)
    mod = fake_pynvml(
        nvmlDeviceGetTemperature=raises(pynvml.NVMLError_NoPermission),
        nvmlDeviceGetClockInfo=lambda h, c: 1980 if c == pynvml.NVML_CLOCK_SM else 0xFFFFFFFF,
        nvmlDeviceGetMaxClockInfo=lambda h, c: 1980,
        nvmlDeviceGetPowerUsage=raises(pynvml.NVMLError_NotSupported),
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000,
        nvmlDeviceGetUtilizationRates=lambda h: util,
        nvmlDeviceGetMemoryInfo=lambda h: mem,
        nvmlDeviceGetPerformanceState=lambda h: pynvml.NVML_PSTATE_UNKNOWN,
        nvmlDeviceGetCurrentClocksEventReasons=raises(pynvml.NVMLError_FunctionNotFound),
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x4,
    )  # no nvmlDeviceGetViolationStatus at all: an old binding
    gate = Nvml(mod)
    got = gate.read(sampler.Device(0, None, "h", "GPU-x", "x"))
    assert set(got) == set(METRICS)
    assert got["temperature_c"] == (None, "no_permission")
    assert got["sm_clock_mhz"] == (1980, "ok")
    assert got["mem_clock_mhz"] == (None, "not_supported")  # NVML_VALUE_NOT_AVAILABLE, not a number
    assert got["power_w"] == (None, "not_supported")
    assert got["power_limit_w"] == (700.0, "ok")
    assert got["util_gpu_pct"] == (97, "ok") and got["util_mem_pct"] == (41, "ok")
    assert got["mem_used_mib"] == (3072, "ok") and got["mem_total_mib"] == (81920, "ok")
    assert got["pstate"] == (None, "not_supported")
    assert got["clock_event_reasons"] == (0x4, "ok")
    assert got["violation_power_ns"] == (None, "function_not_found")
    assert gate.missing_functions == {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetViolationStatus"}


def test_gate_stops_calling_a_lost_gpu():
    calls = []

    def lost(*_a):
        calls.append(1)
        raise pynvml.NVMLError_GpuIsLost()

    mod = fake_pynvml(**{f: lost for f in ("nvmlDeviceGetTemperature", "nvmlDeviceGetClockInfo",
                                           "nvmlDeviceGetPowerUsage", "nvmlDeviceGetMemoryInfo")})
    got = Nvml(mod).read(sampler.Device(0, None, "h", None, None))
    assert all(v == (None, "gpu_lost") for v in got.values())
    assert len(calls) == 1


def test_gate_enumerates_mig_devices():
    def mig_handle(h, j):
        if j == 1:
            raise pynvml.NVMLError_NotFound()  # an empty MIG slot
        return f"{h}/mig{j}"

    mod = fake_pynvml(
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: f"gpu{i}" if i == 0 else raises(pynvml.NVMLError_GpuIsLost)(),
        nvmlDeviceGetUUID=lambda h: f"UUID-{h}",
        nvmlDeviceGetName=lambda h: b"NVIDIA A100-SXM4-80GB",  # old bindings return bytes
        nvmlDeviceGetMigMode=lambda h: [pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_ENABLE],
        nvmlDeviceGetMaxMigDeviceCount=lambda h: 3,
        nvmlDeviceGetMigDeviceHandleByIndex=mig_handle,
    )
    devs = Nvml(mod).devices()
    assert [(d.gpu_index, d.mig_index, d.status) for d in devs] == [
        (0, None, "ok"), (0, 0, "ok"), (0, 2, "ok"), (1, None, "gpu_lost")]
    assert devs[1].uuid == "UUID-gpu0/mig0" and devs[0].name == "NVIDIA A100-SXM4-80GB"


# --- the CLI and crash safety ---------------------------------------------------------------

def test_cli_passes_the_child_exit_code_through(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("FORENSICS_FAKE_NVML", str(FLEETS / "nvitop-139-gpu-lost-mid-run.toml"))
    out = tmp_path / "gpu.parquet"
    res = runner.invoke(cli, ["sample", "--interval", "50ms", "--out", str(out), "--",
                              sys.executable, "-c", "import sys; sys.exit(3)"])
    assert res.exit_code == 3, res.output
    assert pq.read_table(out).num_rows >= 4 and not sampler.journal_path(out).exists()
    assert f"to {out}" in res.stderr


def test_cli_recover_tolerates_a_torn_last_line(runner, tmp_path):
    out = tmp_path / "gpu.parquet"
    rows = sampler.take(FakeNvml("bench-8x-h100"), FakeNvml("bench-8x-h100").devices(), sampler.Tally())
    text = "".join(json.dumps(r) + "\n" for r in rows)
    sampler.journal_path(out).write_text(text + json.dumps(rows[0])[:37])
    res = runner.invoke(cli, ["sample", "--recover", str(out)])
    assert res.exit_code == 0, res.output
    assert res.stderr == f"recovered 8 rows into {out}; skipped 1 torn line(s)\n"
    assert pq.read_table(out).num_rows == 8 and not sampler.journal_path(out).exists()


def test_cli_recover_without_journal_is_an_error(runner, tmp_path):
    res = runner.invoke(cli, ["sample", "--recover", str(tmp_path / "none.parquet")])
    assert res.exit_code == 2 and res.stderr.startswith("Error: nothing to recover")


def _spawn_sampler(tmp_path, out, *command):
    env = {**os.environ, "FORENSICS_FAKE_NVML": str(FLEETS / "l4rz-3-sw-power-cap-a100.toml"),
           "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "forensics", "sample", "--interval", "20ms", "--out", str(out),
                             *(["--", *command] if command else [])],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(pred, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_kill_9_leaves_a_journal_that_recover_turns_into_parquet(runner, tmp_path):
    out, pidfile = tmp_path / "gpu.parquet", tmp_path / "child.pid"
    journal = sampler.journal_path(out)
    child = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    proc = _spawn_sampler(tmp_path, out, sys.executable, "-c", child)
    try:
        _wait_for(lambda: journal.exists() and journal.read_bytes().count(b"\n") >= 30 and pidfile.exists())
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        _wait_for(lambda: pidfile.exists() and pidfile.read_text())
        os.kill(int(pidfile.read_text()), signal.SIGKILL)  # the child we started, in its own group
    flushed = journal.read_bytes().count(b"\n")
    assert flushed >= 30 and flushed % 3 == 0  # whole ticks of 3 GPUs: each tick is fsynced as one write
    assert not out.exists()
    res = runner.invoke(cli, ["sample", "--recover", str(out)])
    assert res.exit_code == 0, res.output
    assert pq.read_table(out).num_rows == flushed and not journal.exists()


def test_sigterm_stops_cleanly_and_writes_parquet(tmp_path):
    out = tmp_path / "gpu.parquet"
    proc = _spawn_sampler(tmp_path, out)
    journal = sampler.journal_path(out)
    _wait_for(lambda: journal.exists() and journal.read_bytes().count(b"\n") >= 6)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert pq.read_table(out).num_rows >= 6 and not journal.exists()


# --- a real GPU, when there is one -----------------------------------------------------------

@pytest.mark.gpu
def test_real_gpu_sampling(tmp_path):
    gate = Nvml()
    try:
        gate.init()
    except GpuUnavailable as exc:
        pytest.skip(f"NVML cannot initialise here: {exc}")
    s = sampler.Session(gate, tmp_path / "gpu.parquet", 0.05)
    assert s.run(max_ticks=3) == 0
    rows = pq.read_table(tmp_path / "gpu.parquet").to_pylist()
    assert len(rows) == 3 * s.tally.devices
    for r in rows:
        assert r["uuid"] and r["gpu_status"] == "ok"
        assert all(r[f"{m}_status"] in (None, *STATUSES) for m in METRICS)
        assert (r["mem_total_mib"] is None) == (r["mem_total_mib_status"] is not None)
