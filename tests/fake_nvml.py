"""A fake NVML gate built from a fleet TOML (fixtures/nvml/*.toml), with the gate's interface.

It implements what forensics.gpu.nvml.Nvml offers the sampler (`init`, `devices`, `read`,
`shutdown`, `missing_functions`); it is not a stub of the global `pynvml` module. The TOML
format is described at the top of fixtures/nvml/gpustat-83-mixed-fleet-missing-metrics.toml.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from forensics.gpu.nvml import METRICS, OK, STATUSES, Device

FLEETS = Path(__file__).resolve().parent.parent / "fixtures" / "nvml"

# The NVML function behind each metric, to record a function_not_found like the real gate does.
_FUNCTION = {m: "nvmlDeviceGetViolationStatus" for m in ("violation_power_ns", "violation_thermal_ns")}
_FUNCTION["clock_event_reasons"] = "nvmlDeviceGetCurrentClocksEventReasons"


class FakeNvml:
    """A fleet of fake GPUs (and MIG devices) answering (value, status) per metric."""

    def __init__(self, fleet: str | Path | dict) -> None:
        if not isinstance(fleet, dict):
            p = Path(fleet)
            p = p if p.exists() else FLEETS / f"{fleet}.toml"
            fleet = tomllib.loads(p.read_text())
        self.fleet = fleet
        self.missing_functions: set[str] = set()
        self.reads: dict[tuple[int, int | None], int] = {}
        self.inited = self.shut = False
        self._spec: dict[tuple[int, int | None], tuple[dict, dict, int | None]] = {}
        defaults = fleet.get("defaults", {})
        for i, g in enumerate(fleet["gpu"]):
            metrics, status = {**defaults, **g.get("metrics", {})}, g.get("status", {})
            self._check(g, metrics, status)
            self._spec[(i, None)] = (metrics, status, g.get("lost_after"))
            for j, mig in enumerate(g.get("mig", [])):
                ms = mig.get("metrics", {})
                st = {m: "not_supported" for m in METRICS if m not in ms} | mig.get("status", {})
                self._spec[(i, j)] = (ms, st, g.get("lost_after"))

    @staticmethod
    def _check(g: dict, metrics: dict, status: dict) -> None:
        bad = [s for s in status.values() if s not in STATUSES]
        unstated = [m for m in METRICS if m not in metrics and m not in status]
        if bad or unstated:
            raise ValueError(f"fleet GPU {g.get('uuid')}: unknown statuses {bad}, metrics neither given nor stated {unstated}")

    def init(self) -> None:
        self.inited = True

    def shutdown(self) -> None:
        self.shut = True

    def devices(self) -> list[Device]:
        out = []
        for i, g in enumerate(self.fleet["gpu"]):
            out.append(Device(i, None, (i, None), g["uuid"], g["name"]))
            out += [Device(i, j, (i, j), m["uuid"], m["name"]) for j, m in enumerate(g.get("mig", []))]
        return out

    def read(self, dev: Device) -> dict[str, tuple[Any, str]]:
        key = dev.handle
        n = self.reads[key] = self.reads.get(key, 0) + 1
        metrics, status, lost_after = self._spec[key]
        if lost_after is not None and n > lost_after:
            return {m: (None, "gpu_lost") for m in METRICS}
        out = {}
        for m in METRICS:
            if m in status:
                out[m] = (None, status[m])
                if status[m] == "function_not_found":
                    self.missing_functions.add(_FUNCTION.get(m, m))
            else:
                v = metrics[m]
                out[m] = (v[(n - 1) % len(v)] if isinstance(v, list) else v, OK)
        return out
