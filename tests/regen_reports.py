"""Build the report test cases from real fixtures and (re)write their goldens.

Run `python -m tests.regen_reports` after a deliberate change to the report; review the diff of
fixtures/reports/*.md like code. tests/test_report.py fails when the output drifts from them.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
RESULTS = ROOT / "fixtures" / "results"
GOLDEN = ROOT / "fixtures" / "reports"

# SGLang's name for vLLM's --max-num-seqs: the corpus log that prints an effective running cap
# is SGLang's (sglang 01: max_running_requests=1, 82 mamba state slots).
CAPACITY_CMD = """#!/bin/bash
# capacity sweep: asks for 256 running requests (vLLM: --max-num-seqs 256)
export HF_TOKEN=hf_FakeTokenForRedactionTest0123456789
python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B-FP8 --tp-size 2 \\
  --mem-fraction-static 0.85 --context-length 8192 --max-running-requests 256 \\
  --chunked-prefill-size 2048 --api-key sk-test-0123456789abcdefghij
"""

CASES: dict[str, dict[str, Path | str]] = {
    # startup failures
    "vllm-negative-kv": {"server.log": CORPUS / "vllm" / "02_gptoss120b-negative-kv-memory.log"},
    "vllm-max-seq-len": {"server.log": CORPUS / "vllm" / "10_2026-max-seq-len-exceeds-kv-valueerror.log"},
    # crash after ready
    "vllm-oom-after-ready": {"server.log": CORPUS / "vllm" / "20_2026-runtime-cuda-oom-asyncllm-output-handler.log"},
    # the scheduler died, HTTP kept answering 200, the benchmark went on
    "sglang-dead-but-serving": {"server.log": CORPUS / "sglang" / "04_dp-scheduler-crash-health-generate-still-200.log",
                                "results.jsonl": RESULTS / "sglang_bench_serving_llama_3_3_70b_online_output.jsonl"},
    # requested 256 running requests, the engine allows 1; the benchmark runs at concurrency 4
    "capacity-limited-sweep": {"server.log": CORPUS / "sglang" / "01_ktransformers-qwen35-397b-mamba-tp2.log",
                               "cmd.sh": CAPACITY_CMD,
                               "profile_export_aiperf.json": RESULTS / "aiperf_profile_export_aiperf_synthetic.json",
                               "profile_export.jsonl": RESULTS / "aiperf_profile_export_synthetic.jsonl",
                               "gpu.csv": RESULTS / "nvidia-smi_query-gpu_csv_with_units_bpytop_issue26.csv"},
}


def make_run(root: Path, case: str) -> Path:
    """Write the run folder of `case` under `root` (the folder name is the run id)."""
    d = root / case
    d.mkdir(parents=True, exist_ok=True)
    for name, src in CASES[case].items():
        if isinstance(src, Path):
            shutil.copy(src, d / name)
        else:
            (d / name).write_text(src, encoding="utf-8")
    return d


def render_case(root: Path, case: str, fmt: str = "md") -> str:
    """Ingest the case into a fresh archive under `root` and render its report."""
    from forensics.archive import open_archive
    from forensics.ingest import ingest_paths
    from forensics.report import build_report, render_html, render_markdown
    from forensics.rules import load_rules

    run = make_run(root / "runs", case)
    db = root / f"{case}.duckdb"
    ingest_paths(db, [run])
    con = open_archive(db, read_only=True)
    try:
        rep = build_report(con, case, load_rules(), run_dir=run)
    finally:
        con.close()
    return render_markdown(rep) if fmt == "md" else render_html(rep)


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            text = render_case(Path(tmp) / case, case)
            (GOLDEN / f"{case}.md").write_text(text, encoding="utf-8")
            print(f"wrote {GOLDEN / case}.md")


if __name__ == "__main__":
    main()
