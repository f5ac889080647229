"""Tricky SGLang line shapes, each from a real log: the facts must survive the envelope."""
from __future__ import annotations

import io

from forensics.scan import scan_stream

from .conftest import CORPUS

SGLANG = CORPUS / "sglang"


def _lines(stem: str) -> list[str]:
    path = next(SGLANG.glob(f"{stem}*.log"))
    return path.read_text(encoding="utf-8").split("\n")


def _scan(text: str):
    return scan_stream(io.BytesIO(text.encode("utf-8")), "test.log")


def test_server_args_cut_by_a_paste_keeps_the_complete_items() -> None:
    # 02_*: the 2024 bare `server_args=ServerArgs(...)` line, cut in the middle of a value as
    # issue pastes cut long lines: every item before the cut is read, nothing after it.
    full = _lines("02_")[0]
    assert full.startswith("server_args=ServerArgs(") and full.endswith(")")
    cut = full[: full.index("dp_size=1") + len("dp_size=1, load_bal")]
    res = _scan(cut + "\n")
    assert res.engine == "sglang"
    assert res.requested["tp_size"].value == 4
    assert res.requested["mem_fraction_static"].value == 0.86
    assert res.requested["dp_size"].value == 1
    assert res.meta["model"].value == "/root/hf_model/Qwen/Qwen2-72B-Instruct-GPTQ-Int4"
    assert "load_balance_method" not in res.requested  # the cut item
    assert "disable_flashinfer" not in res.requested  # after the cut
    assert "max_running_requests" not in res.requested  # printed as None: not a request
    # the uncut line reads through to the last item
    whole = _scan(full + "\n").requested
    assert whole["disable_flashinfer"].value is False
    assert whole["nnodes"].value == 1


def test_dp_tp_ep_rank_prefixes_give_the_rank_and_the_lowest_rank_wins() -> None:
    # 22_*: `[date time DPd TPt EPe]` prefixes (DP attention + expert parallel on GB200)
    lines = _lines("22_")
    res = _scan("\n".join(lines[:6]) + "\n")
    assert res.effective["cuda_graph_max_bs"].value == 256
    assert res.effective["cuda_graph_max_bs"].rank == "DP0 TP0 EP0"
    assert res.errors[0].type == "Scheduler hit an exception"
    assert res.errors[0].rank == "DP0 TP0 EP0"
    # 23_*: `[HH:MM:SS TPn]` (autumn 2024): ranks print different pool figures; TP0's stands
    res = _scan("\n".join(_lines("23_")[:9]) + "\n")
    fact = res.effective["mem_pool_end_avail_gib"]
    assert (fact.value, fact.rank) == (18.66, "TP0")
    assert {o.rank for o in fact.observations} >= {"TP0", "TP1", "TP7"}
    # 04_*: DP1 TP2's batch line counts towards the peaks like DP0 TP0's
    res = _scan("\n".join(_lines("04_")[:3]) + "\n")
    assert res.runtime["peak_running"].value == 51
    assert res.runtime["peak_running"].rank == "DP1 TP2"
    assert res.runtime["peak_waiting"].rank == "DP0 TP0"


def test_mamba_capped_to_line_without_prefix_gives_the_cap_and_the_slots() -> None:
    # 29_*: pasted without its timestamp prefix and without the "To raise it" tail
    line = _lines("29_")[0]
    res = _scan(line + "\n")
    assert res.engine == "sglang"
    assert res.effective["max_running_requests"].value == 2
    assert res.effective["state_slots"].value == 10
    assert res.effective["state_slots"].unit == "slots"
    assert res.effective["state_slots_per_request"].value == 5
    assert res.effective["max_running_requests"].rank is None
    # 01_*: the 2026 `Mamba Cache is allocated` line (no space before GB, trailing space)
    res = _scan(_lines("01_")[5] + "\n")
    assert res.effective["state_slots"].value == 82
    assert res.effective["mamba_ssm_state_gib"].value == 7.29
