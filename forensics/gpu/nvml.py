"""The NVML gate: the only module that imports `pynvml`, lazily; every query gives (value, status).

A value is never a sentinel. When NVML cannot give a metric, the value is None and the
status says why, one of `STATUSES`:

    ok                  the value is real
    not_supported       the device (or a MIG handle) does not offer it (gpustat#83, nviwatch#28),
                        or NVML answered with its "not available" sentinel (0xFFFFFFFF)
    no_permission       the call needs privileges this process lacks
    gpu_lost            the GPU fell off the bus (NVML_ERROR_GPU_IS_LOST, nvitop#139)
    function_not_found  the driver's libnvidia-ml lacks the call: driver older than the binding
    no_driver           libnvidia-ml.so.1 is missing or the kernel driver is not loaded
    unknown_error       any other NVML error

The sampler receives an object with this interface (`init`, `devices`, `read`, `shutdown`,
`missing_functions`), so tests pass a fake fleet instead (tests/fake_nvml.py).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from forensics.errors import GpuUnavailable

log = logging.getLogger(__name__)

OK = "ok"
STATUSES = ("ok", "not_supported", "no_permission", "gpu_lost", "function_not_found", "no_driver", "unknown_error")

# Metric columns, in schema order; units are in the names.
METRICS = (
    "temperature_c", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "mem_clock_max_mhz",
    "power_w", "power_limit_w", "util_gpu_pct", "util_mem_pct", "mem_used_mib", "mem_total_mib",
    "pstate", "clock_event_reasons", "violation_power_ns", "violation_thermal_ns",
)

# NVML error code -> status. Codes are nvml.h's, the same as pynvml's NVML_ERROR_* constants.
_CODE_STATUS = {3: "not_supported", 4: "no_permission", 15: "gpu_lost", 13: "function_not_found",
                9: "no_driver", 12: "no_driver"}
_NOT_AVAILABLE = (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)  # NVML_VALUE_NOT_AVAILABLE_{uint,ulonglong}
_PSTATE_UNKNOWN = 32  # NVML_PSTATE_UNKNOWN
_MIG_ENABLE = 1  # NVML_DEVICE_MIG_ENABLE
_MIB = 1 << 20

_INIT_WHY = {
    12: ("no NVIDIA driver found (libnvidia-ml.so.1 cannot be loaded)",
         "install the driver or run where `nvidia-smi` works"),
    9: ("the NVIDIA kernel driver is not loaded",
        "load it (`sudo modprobe nvidia`) or run where `nvidia-smi` works"),
    18: ("the NVML library and the kernel driver have different versions, usually after a driver upgrade",
         "reboot, or reload the driver modules, then check that `nvidia-smi` works"),
    4: ("this user may not open the NVIDIA device files",
        "run as a user in the group that owns /dev/nvidia*, then check that `nvidia-smi` works"),
}


@dataclass(frozen=True, slots=True)
class Device:
    """One thing to sample: a GPU (mig_index None) or a MIG device of GPU `gpu_index`.

    `status` is the status of enumerating it; a device whose handle could not be had is
    kept (handle None) so that the sampler still writes a status row for it.
    """

    gpu_index: int
    mig_index: int | None
    handle: Any
    uuid: str | None
    name: str | None
    status: str = OK


def status_of_code(code: int | None) -> str:
    """Status name of an NVML error code (nvml.h numbering)."""
    return _CODE_STATUS.get(code, "unknown_error")


class Nvml:
    """NVML through one gate: lazy import, lazy init, every call mapped to (value, status).

    Args:
        module: the `pynvml` module to use; None imports it on `init()`. Tests pass a fake module.
    """

    def __init__(self, module: Any = None) -> None:
        self._m = module
        self._ready = False
        self.missing_functions: set[str] = set()

    def init(self) -> None:
        """Import pynvml and initialise NVML.

        Raises:
            GpuUnavailable: nvidia-ml-py is not installed; no driver (NVMLError_LibraryNotFound);
                the kernel module is not loaded (DriverNotLoaded); driver/library mismatch after an
                upgrade (LibRmVersionMismatch); no permission on /dev/nvidia*.
        """
        if self._ready:
            return
        if self._m is None:
            try:
                import pynvml  # the one import of pynvml in forensics
            except ImportError as exc:
                raise GpuUnavailable("NVML could not initialise", f"the NVML binding is missing ({exc})",
                                     hint="pip install 'nvidia-ml-py>=12.535,<14'") from None
            self._m = pynvml
        try:
            self._m.nvmlInit()
        except self._m.NVMLError as exc:
            code = getattr(exc, "value", None)
            why, hint = _INIT_WHY.get(code, (f"NVML error {code}: {exc}", "check that `nvidia-smi` works"))
            raise GpuUnavailable("NVML could not initialise", why, hint=hint) from None
        self._ready = True

    def shutdown(self) -> None:
        """Release NVML; safe to call twice."""
        if self._ready:
            self._ready = False
            try:
                self._m.nvmlShutdown()
            except self._m.NVMLError:
                pass

    def call(self, fn: str, *args: Any) -> tuple[Any, str]:
        """Call pynvml function `fn`; return (result, "ok") or (None, status). Never raises NVMLError."""
        f = getattr(self._m, fn, None)
        if f is None:
            return None, self._missing(fn)
        try:
            return f(*args), OK
        except self._m.NVMLError as exc:
            status = status_of_code(getattr(exc, "value", None))
            if status == "function_not_found":
                self._missing(fn)
            return None, status

    def _missing(self, fn: str) -> str:
        if fn not in self.missing_functions:
            self.missing_functions.add(fn)
            log.warning("NVML function %s is not available in this driver/binding", fn)
        return "function_not_found"

    def devices(self) -> list[Device]:
        """Every GPU, and every MIG device of a MIG-enabled GPU, in index order.

        Raises:
            GpuUnavailable: NVML cannot count the GPUs, or there are none.
        """
        self.init()
        n, st = self.call("nvmlDeviceGetCount")
        if st != OK or not n:
            raise GpuUnavailable("no GPU to sample", f"NVML counted {n if st == OK else st} devices",
                                 hint="check that `nvidia-smi -L` lists a GPU")
        out: list[Device] = []
        for i in range(n):
            h, st = self.call("nvmlDeviceGetHandleByIndex", i)
            if st != OK:
                out.append(Device(i, None, None, None, None, st))
                continue
            out.append(Device(i, None, h, self._text(h, "nvmlDeviceGetUUID"), self._text(h, "nvmlDeviceGetName")))
            out.extend(self._mig_devices(i, h))
        return out

    def _mig_devices(self, i: int, h: Any) -> list[Device]:
        mode, st = self.call("nvmlDeviceGetMigMode", h)
        if st != OK or not mode or mode[0] != _MIG_ENABLE:
            return []
        count, st = self.call("nvmlDeviceGetMaxMigDeviceCount", h)
        found = []
        for j in range(count or 0):
            mh, st = self.call("nvmlDeviceGetMigDeviceHandleByIndex", h, j)
            if st == OK:  # an empty slot answers NVML_ERROR_NOT_FOUND: nothing to sample there
                found.append(Device(i, j, mh, self._text(mh, "nvmlDeviceGetUUID"), self._text(mh, "nvmlDeviceGetName")))
        return found

    def _text(self, h: Any, fn: str) -> str | None:
        v, st = self.call(fn, h)
        return (v.decode() if isinstance(v, bytes) else v) if st == OK else None

    def read(self, dev: Device) -> dict[str, tuple[Any, str]]:
        """All of `METRICS` for one device, each (value, status). Stops calling once the GPU is lost."""
        m, h = self._m, dev.handle
        if h is None:
            return {k: (None, dev.status) for k in METRICS}
        out: dict[str, tuple[Any, str]] = {}
        lost = False

        def get(fn: str, *args: Any) -> tuple[Any, str]:
            nonlocal lost
            if lost:
                return None, "gpu_lost"
            v, st = self.call(fn, h, *args)
            lost = st == "gpu_lost"
            return v, st

        def put(name: str, v: Any, st: str, scale: float = 1) -> None:
            if st == OK and (v is None or v in _NOT_AVAILABLE):
                v, st = None, "not_supported"
            out[name] = (v / scale if scale != 1 else v, st) if st == OK else (None, st)

        put("temperature_c", *get("nvmlDeviceGetTemperature", getattr(m, "NVML_TEMPERATURE_GPU", 0)))
        sm, mem = getattr(m, "NVML_CLOCK_SM", 1), getattr(m, "NVML_CLOCK_MEM", 2)
        put("sm_clock_mhz", *get("nvmlDeviceGetClockInfo", sm))
        put("sm_clock_max_mhz", *get("nvmlDeviceGetMaxClockInfo", sm))
        put("mem_clock_mhz", *get("nvmlDeviceGetClockInfo", mem))
        put("mem_clock_max_mhz", *get("nvmlDeviceGetMaxClockInfo", mem))
        put("power_w", *get("nvmlDeviceGetPowerUsage"), scale=1000)  # NVML reports milliwatts
        put("power_limit_w", *get("nvmlDeviceGetEnforcedPowerLimit"), scale=1000)
        u, st = get("nvmlDeviceGetUtilizationRates")
        put("util_gpu_pct", getattr(u, "gpu", None), st)
        put("util_mem_pct", getattr(u, "memory", None), st)
        mi, st = get("nvmlDeviceGetMemoryInfo")
        put("mem_used_mib", None if mi is None else mi.used // _MIB, st)
        put("mem_total_mib", None if mi is None else mi.total // _MIB, st)
        p, st = get("nvmlDeviceGetPerformanceState")
        put("pstate", None if p == _PSTATE_UNKNOWN else p, st)
        r, st = get("nvmlDeviceGetCurrentClocksEventReasons")
        if st == "function_not_found":  # drivers before r535 only have the older name
            r, st = get("nvmlDeviceGetCurrentClocksThrottleReasons")
        put("clock_event_reasons", r, st)
        for name, policy in (("violation_power_ns", "NVML_PERF_POLICY_POWER"), ("violation_thermal_ns", "NVML_PERF_POLICY_THERMAL")):
            v, st = get("nvmlDeviceGetViolationStatus", getattr(m, policy, 0 if "power" in name else 1))
            put(name, getattr(v, "violationTime", None), st)
        return out
