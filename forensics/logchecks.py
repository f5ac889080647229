"""Findings a single log can prove on its own, before any archive exists.

The archive rules under rules/ check the same things across files; these run inside
`forensics scan` so that one log already reports its obvious lies.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from forensics.model import Finding

if TYPE_CHECKING:
    from forensics.scan import ScanResult

_REQUESTED_RUNNING = ("max_running_requests", "max_num_seqs")


def log_findings(res: "ScanResult") -> list[Finding]:
    out: list[Finding] = []
    eff = res.effective
    req = res.requested
    cap = eff.get("max_running_requests")
    asked = next((req[k] for k in _REQUESTED_RUNNING if k in req), None)
    if cap is not None and asked is not None and isinstance(asked.value, (int, float)) and not isinstance(asked.value, bool):
        if cap.value < asked.value:
            out.append(Finding(
                "limits.running_below_requested", "warning",
                "Engine allows fewer running requests than requested",
                f"requested {asked.value} running requests, engine allowed {cap.value}",
                evidence=[cap.evidence, asked.evidence]))
    kv = eff.get("kv_cache_gib")
    if kv is not None and isinstance(kv.value, (int, float)) and kv.value <= 0:
        out.append(Finding("kv.no_memory", "error", "No memory left for the KV cache",
                           f"available KV cache memory is {kv.value} GiB", evidence=[kv.evidence]))
    for name in ("kv_cache_tokens",):
        f = eff.get(name)
        if f is not None and isinstance(f.value, (int, float)) and f.value <= 0:
            out.append(Finding("kv.no_memory", "error", "No memory left for the KV cache",
                               f"KV cache holds {f.value} tokens", evidence=[f.evidence]))
    blocks = eff.get("gpu_blocks")
    if blocks is not None and blocks.value == 0:
        out.append(Finding("kv.no_memory", "error", "No memory left for the KV cache",
                           "the engine allocated 0 GPU KV cache blocks", evidence=[blocks.evidence]))
    warn = eff.get("fp8_scale_warnings")
    if warn is not None and warn.value:
        out.append(Finding("precision.fp8_uncalibrated", "warning", "FP8 KV cache or attention ran with default scales",
                           f"{len(warn.value)} warning(s) about scaling factors of 1.0: {warn.value[0][:160]}",
                           evidence=[warn.evidence]))
    if res.outcome == "failed_startup":
        root = res.errors[0] if res.errors else None
        msg = "the engine never became ready"
        ev = []
        if root is not None:
            msg += f": {root.type or ''}{': ' if root.type and root.message else ''}{root.message or ''}".rstrip()
            if root.rank:
                msg += f" (rank {root.rank})"
            ev.append(root.evidence)
        out.append(Finding("startup.failed", "error", "The engine never became ready", msg, evidence=ev))
    if res.outcome == "crashed_after_ready":
        root = res.errors[0] if res.errors else None
        ev = [root.evidence] if root else []
        if res.ready is not None:
            ev.append(res.ready)
        msg = "fatal error after the server was ready"
        if root is not None:
            msg += f": {root.type or ''} {root.message or ''}".rstrip()
        out.append(Finding("engine.died_after_ready", "error", "The engine died after it was ready", msg, evidence=ev))
    if res.errors and res.http_ok_after_fatal and res.http_ok_after_fatal_evidence is not None:
        out.append(Finding("engine.dead_but_serving", "critical", "HTTP 200 responses after the engine died",
                           f"{res.http_ok_after_fatal} HTTP 200 responses after the fatal error at line {res.errors[0].evidence.line}",
                           evidence=[res.errors[0].evidence, res.http_ok_after_fatal_evidence]))
    pre = res.runtime.get("preemptions")
    if pre is not None and pre.value:
        out.append(Finding("runtime.preemption", "warning", "The engine preempted or retracted requests",
                           f"{pre.value} preemption/retraction events", evidence=[pre.evidence]))
    for f in out:
        f.run = None
    return out
