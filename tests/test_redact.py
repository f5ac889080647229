"""forensics.redact: secrets in real-looking launch commands and log lines."""
from __future__ import annotations

import pytest

from forensics.redact import MASK, find_secrets, redact

CASES = [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --api-key sk-proj-4f9a8b7c6d5e4f3a2b1c --max-num-seqs 256",
     f"vllm serve meta-llama/Llama-3.1-8B-Instruct --api-key {MASK} --max-num-seqs 256"),
    ("python -m sglang.launch_server --model-path Qwen/Qwen2-72B --api-key=s3cr3t-team-key --tp 4",
     f"python -m sglang.launch_server --model-path Qwen/Qwen2-72B --api-key={MASK} --tp 4"),
    ("export HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345", f"export HF_TOKEN={MASK}"),
    ("docker run -e HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345 -e OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx vllm/vllm-openai",
     f"docker run -e HF_TOKEN={MASK} -e OPENAI_API_KEY={MASK} vllm/vllm-openai"),
    ('curl -s http://localhost:8000/v1/models -H "Authorization: Bearer tok-7f3e2d1c0b9a8f7e6d5c"',
     f'curl -s http://localhost:8000/v1/models -H "Authorization: Bearer {MASK}"'),
    ("INFO 05-01 14:39:06 [api_server.py:1090] args: Namespace(..., api_key=['sk-live-0123456789abcdef'], ...)",
     f"INFO 05-01 14:39:06 [api_server.py:1090] args: Namespace(..., api_key=['{MASK}'], ...)"),
    ("(APIServer pid=1) INFO 08-20 18:03:50 [utils.py:326] non-default args: {'model': 'openai/gpt-oss-120b', 'api_key': ['abc123']}",
     f"(APIServer pid=1) INFO 08-20 18:03:50 [utils.py:326] non-default args: {{'model': 'openai/gpt-oss-120b', 'api_key': ['{MASK}']}}"),
    ("[2025-05-26 07:40:01] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-R1', api_key='team-key-42', tp_size=8)",
     f"[2025-05-26 07:40:01] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-R1', api_key='{MASK}', tp_size=8)"),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY aws s3 cp",
     f"AWS_ACCESS_KEY_ID={MASK} AWS_SECRET_ACCESS_KEY={MASK} aws s3 cp"),
    ("downloading with token hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345 from the hub", f"downloading with token {MASK} from the hub"),
]

UNTOUCHED = [
    "INFO 08-20 18:04:22 [gpu_worker.py:276] Available KV cache memory: -2.14 GiB",
    "max_total_num_tokens=580364, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=1",
    "TOKENIZERS_PARALLELISM=false vllm serve m --max-num-batched-tokens 8192",
    "Using hf_transfer for downloads; tokenizer from hf_hub cache; sk-learn installed",
    "[2025-05-26 07:48:17 DP0 TP0] Prefill batch. #new-seq: 1, #new-token: 208, #cached-token: 0, token usage: 0.86",
]


@pytest.mark.parametrize("raw,expected", CASES)
def test_secrets_are_redacted(raw: str, expected: str) -> None:
    assert redact(raw) == expected
    assert redact(expected) == expected  # idempotent
    assert find_secrets(raw) and not find_secrets(expected)


@pytest.mark.parametrize("line", UNTOUCHED)
def test_ordinary_lines_are_untouched(line: str) -> None:
    assert redact(line) == line
    assert find_secrets(line) == []


def test_none_and_empty() -> None:
    assert redact(None) is None and redact("") == ""
