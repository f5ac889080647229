"""SGLang `python -m sglang.bench_serving` JSONL: one object per run, bare `Infinity` allowed.

Records carry no date and no model (the model comes from `server_info.model_path` when the
newer builds embed it; `server_info` itself stays in `extra`). No `failed` count is written:
it is derived from the `errors` array when `--output-details` kept it.
"""
from __future__ import annotations

import re

from .base import NOTE_NO_TIME, ImportResult, Picker, extra_json, to_int
from .jsonstream import JsonRecord, read_each
from .vllm_bench import request_rows, serving_stats

TOOL = "sglang_bench"
NAME_HINTS = re.compile(r"sglang|\.jsonl$", re.I)


def sniff(head: bytes, name: str) -> bool:
    """A JSON object with SGLang's `e2e_latency` stats or retokenized totals, no vLLM `model_id`."""
    if b'"model_id"' in head:
        return False
    # Per-request arrays can push the summary keys past the head: the backend name and
    # a bare `Infinity` request rate (vLLM writes "inf" as a string) identify it too.
    return (b'"total_output_tokens_retokenized"' in head
            or re.search(rb'"(mean|median|p\d+)_e2e_latency_ms"', head) is not None
            or (re.search(rb'"backend":\s*"sglang', head) is not None and b'"max_concurrency"' in head))


def _point(res: ImportResult, rec: JsonRecord) -> None:
    obj = rec.value
    p = Picker(obj)
    stats = serving_stats(p, ("e2e_latency",))
    info = obj.get("server_info")
    model = info.get("model_path") if isinstance(info, dict) else None
    failed = request_rows(res, rec, p)
    res.add_point(
        record_index=rec.index, line=rec.line, tool=TOOL,
        backend=p.get("backend"), model=model, time_note=NOTE_NO_TIME,
        num_prompts=to_int(p.get("num_prompts")), failed=failed,
        extra=extra_json(p.extra()), **stats,
    )


def read(data: bytes, source: str) -> ImportResult:
    return read_each(TOOL, data, source, _point, objects_only=True)
