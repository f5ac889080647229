"""Redact secrets (tokens, API keys, bearer headers, AWS keys) in text that leaves the machine.

Reports quote launch commands and log lines; both routinely carry `--api-key`, `HF_TOKEN=` or an
`Authorization: Bearer` header. `redact(text)` replaces the secret part with `***REDACTED***` and
keeps the name, so a reader still sees *that* a key was passed. Pure string functions, no I/O, so
`scan` and `export` can use them too.
"""
from __future__ import annotations

import re

MASK = "***REDACTED***"

# Each pattern keeps group "keep" (the name, flag or header) and replaces group "secret".
# Order matters: the named forms (HF_TOKEN=hf_...) run before the bare token forms.
_VALUE = r"""(?:"[^"\n]*"|'[^'\n]*'|[^\s"'`,;]+)"""
_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Authorization: Bearer xxx / "Authorization": "Bearer xxx" / -H 'Authorization: Bearer xxx'
    re.compile(r"(?P<keep>\bAuthorization\"?\s*[:=]\s*\"?(?:Bearer|Basic|Token)\s+)(?P<secret>[^\s\"',]+)", re.I),
    # bare "Bearer xxx" elsewhere (x-api-key headers, curl examples)
    re.compile(r"(?P<keep>\bBearer\s+)(?P<secret>[A-Za-z0-9._~+/=-]{8,})"),
    # --api-key X, --api-key=X, --hf-token X, --token X, --openai-api-key X
    re.compile(r"(?P<keep>--(?:[a-z0-9]+-)*(?:api-key|token|secret|password)(?:\s+|=))(?P<secret>" + _VALUE + ")", re.I),
    # ENV=VALUE / export ENV=VALUE / ENV: VALUE for secret-looking names (HF_TOKEN, OPENAI_API_KEY, ...)
    re.compile(r"(?P<keep>\b[A-Z0-9_]*(?:TOKEN|API_KEY|APIKEY|SECRET|PASSWORD|SECRET_ACCESS_KEY)\b\"?\s*[=:]\s*)"
               r"(?P<secret>" + _VALUE + ")"),
    # api_key='...' in Python reprs (SGLang server_args=ServerArgs(..., api_key='x', ...))
    re.compile(r"(?P<keep>\b(?:api_key|hf_token|token|secret|password)\s*=\s*)(?P<secret>'[^'\n]+'|\"[^\"\n]+\")", re.I),
    # 'api_key': 'x' / 'api_key': ['x'] in dict reprs (vLLM `non-default args: {...}`)
    re.compile(r"(?P<keep>['\"](?:api_key|hf_token|token)['\"]\s*:\s*\[?\s*)(?P<secret>'[^'\n]+'|\"[^\"\n]+\")", re.I),
    # Hugging Face user/org tokens
    re.compile(r"(?P<keep>)(?P<secret>\bhf_[A-Za-z0-9]{20,})"),
    # OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-...
    re.compile(r"(?P<keep>)(?P<secret>\bsk-[A-Za-z0-9_-]{16,})"),
    # AWS access key ids
    re.compile(r"(?P<keep>)(?P<secret>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"),
    # aws_secret_access_key = ... (config-file form)
    re.compile(r"(?P<keep>\baws_secret_access_key\s*[=:]\s*)(?P<secret>[A-Za-z0-9/+=]{30,})", re.I),
)


def _sub(m: re.Match[str]) -> str:
    secret = m.group("secret")
    if secret == MASK or secret.strip("'\"") in ("", MASK):
        return m.group(0)
    quote = secret[0] if secret[:1] in ("'", '"') and secret[-1:] == secret[:1] and len(secret) > 1 else ""
    return m.group("keep") + (f"{quote}{MASK}{quote}" if quote else MASK)


def redact(text: str | None) -> str | None:
    """Replace secrets in `text` with `***REDACTED***`, keeping the flag or variable name.

    Covers `hf_...` tokens, `--api-key X` / `--api-key=X` (and other `--*-token`/`--*-key` flags),
    `Authorization: Bearer ...`, `HF_TOKEN=...`, `OPENAI_API_KEY=...` and other `*_TOKEN`,
    `*_API_KEY`, `*_SECRET*` variables, `sk-...` keys and AWS access key ids and secrets.
    None stays None.
    """
    if not text:
        return text
    for pat in _PATTERNS:
        text = pat.sub(_sub, text)
    return text


def find_secrets(text: str) -> list[str]:
    """The secret substrings `redact` would replace (for scan/export warnings)."""
    found: list[str] = []
    for pat in _PATTERNS:
        for m in pat.finditer(text):
            s = m.group("secret")
            if s.strip("'\"") and MASK not in s:
                found.append(s)
    return found


_SECRET_NAME = re.compile(r"(?i)(?:^|_)(?:api_key|apikey|token|secret|password|hf_token)(?:$|_)")


def redact_value(name: str, value: object) -> object:
    """A fact value with secrets removed: the whole value when the argument names a secret
    (`api_key`, `hf_token`, `*_token`), else the value's text through `redact`."""
    if _SECRET_NAME.search(name) and value not in (None, "", [], False, True):
        return MASK
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(name, v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(str(k), v) for k, v in value.items()}
    return value


def redact_tree(obj: object, name: str = "") -> object:
    """Redact every string in a JSON-like tree; values under secret-named keys are masked whole."""
    if isinstance(obj, dict):
        # A scalar under a secret-named key is masked whole; a fact object under one (the
        # requested `api_key` fact) keeps its shape, its value masked by the caller.
        return {k: (redact_value(k, v) if not isinstance(v, (dict, list)) and k not in ("raw", "message", "value")
                    and _SECRET_NAME.search(str(k)) else redact_tree(v, str(k))) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_tree(v, name) for v in obj]
    if isinstance(obj, str):
        return redact(obj)
    return obj
