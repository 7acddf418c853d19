"""Tier (c), optional: an LLM judge behind any OpenAI-compatible chat endpoint (vLLM, Ollama, remote).

Propose-then-verify: retrieval proposes candidate rules, the judge reads the log and says which one,
if any, the person is about to violate. The monitor works fully without it; on any failure (timeout,
HTTP error, unreadable answer) the judge raises `JudgeError` and the monitor keeps retrieval's answer.
"""

from __future__ import annotations

import json
import re

import httpx

from models.safety.retrieval import Candidate

PROMPT = (
    "You watch over a person's safety. Below is an observation log, oldest first, and numbered "
    "safety rules that may apply. Decide whether the person is doing, or about to do, something "
    "that violates one of these rules. Answer with JSON only: "
    '{{"risk": true or false, "rule": <number or null>, "reason": "<one sentence>"}}.\n\n'
    "LOG:\n{log}\n\nRULES:\n{rules}\n"
)


class JudgeError(RuntimeError):
    """The judge could not give a usable answer."""


class ChatJudge:
    """Asks `POST {url}/chat/completions` (or `url` itself if it already ends with that path)."""

    def __init__(self, url: str, model: str = "default", timeout_s: float = 10.0, api_key: str | None = None):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"judge URL must start with http:// or https://, got {url!r}")
        self.url = url if url.rstrip("/").endswith("/chat/completions") else url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout_s = timeout_s
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def verify(self, log: str, candidates: list[Candidate]) -> tuple[Candidate | None, str]:
        """The candidate the judge confirms (None: no risk) and its one-sentence reason."""
        if not candidates:
            return None, ""
        rules = "\n".join(f"{i + 1}. {c.rule.knowledge}" for i, c in enumerate(candidates))
        body = {"model": self.model, "temperature": 0.0,
                "messages": [{"role": "user", "content": PROMPT.format(log=log, rules=rules)}]}
        try:
            resp = httpx.post(self.url, json=body, headers=self.headers, timeout=self.timeout_s)
            resp.raise_for_status()
            content = resp.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise JudgeError(f"judge request failed: {exc}") from exc
        return self._parse(content, candidates)

    @staticmethod
    def _parse(content: str, candidates: list[Candidate]) -> tuple[Candidate | None, str]:
        match = re.search(r"\{.*\}", content or "", re.DOTALL)
        if not match:
            raise JudgeError(f"judge answer holds no JSON object: {content[:80]!r}")
        try:
            answer = json.loads(match.group(0))
        except json.JSONDecodeError as exc:
            raise JudgeError(f"judge answer is not valid JSON: {exc}") from exc
        reason = str(answer.get("reason", "")).strip()
        if not answer.get("risk"):
            return None, reason
        try:
            index = int(answer.get("rule")) - 1
        except (TypeError, ValueError) as exc:
            raise JudgeError("judge reported a risk but no rule number") from exc
        if not 0 <= index < len(candidates):
            raise JudgeError(f"judge named rule {index + 1}, outside 1..{len(candidates)}")
        return candidates[index], reason
