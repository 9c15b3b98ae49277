"""Planted fake secrets in prompts, command outputs, arguments and bad lines never reach the store."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from conftest import FIXTURES, query

from logmine.ingest.run import IngestConfig, ingest

SESSION = next((FIXTURES / "codex-generated/codex-0.171.0").glob("*.jsonl"))
# Obviously fake, but in the real formats.
GITHUB = "ghp_" + "FAKE0123456789abcdefghijklmnopqrstuv"[:36]
OPENAI = "sk-proj-" + "FAKEfake0123456789" * 3
AWS = "AKIA" + "FAKE0123456789AB"
PASSWORD_URL = "postgres://admin:hunter2FAKEpass@db.internal:5432/app"


def _plant(line: dict) -> dict:
    payload = line.get("payload", {})
    if payload.get("type") == "message" and payload.get("role") == "user":
        for part in payload["content"]:
            part["text"] += f"\nuse OPENAI_API_KEY={OPENAI} and {PASSWORD_URL}"
    if payload.get("type") == "function_call":
        args = json.loads(payload["arguments"])
        args["cmd"] = f"GITHUB_TOKEN={GITHUB} {args['cmd']}"
        payload["arguments"] = json.dumps(args)
    if payload.get("type") == "function_call_output":
        payload["output"] += f"\naws_access_key_id = {AWS}\n"
    return line


def test_planted_secrets_are_redacted_everywhere(tmp_path):
    lines = [json.dumps(_plant(json.loads(raw))) for raw in SESSION.read_text().splitlines()]
    lines.insert(3, f'{{"broken": "{GITHUB}"')  # a quarantined line: its excerpt must be clean too
    planted = tmp_path / "in" / SESSION.name
    planted.parent.mkdir()
    planted.write_text("\n".join(lines) + "\n")
    assert all(secret in planted.read_text() for secret in (GITHUB, OPENAI, AWS, "hunter2FAKEpass"))
    store = tmp_path / "store"
    summary = ingest(IngestConfig(paths=(planted.parent,), store=store, redact_style="placeholder"))
    assert summary.quarantined == 1
    for part in store.rglob("*.parquet"):
        text = pq.read_table(part).to_pandas().to_csv()
        for secret in (GITHUB, OPENAI, AWS, "hunter2FAKEpass"):
            assert secret not in text, (part, secret)
    for blob in [p.read_bytes() for p in store.iterdir() if p.is_file()]:
        assert GITHUB.encode() not in blob and OPENAI.encode() not in blob
    kinds = set(summary.redactions)
    assert {"github_token", "openai_api_key", "aws_access_key_id", "url_password"} <= kinds
    prompts = query(store, "SELECT text FROM events WHERE kind = 'user_message' AND NOT is_injected "
                           "AND record_type = 'response_item/message'")
    assert all("[REDACTED:openai_api_key]" in p["text"] for p in prompts)
    commands = query(store, "SELECT command FROM tool_calls WHERE tool_name = 'exec_command'")
    assert all(c["command"].startswith("GITHUB_TOKEN=[REDACTED:") for c in commands)
    excerpt = query(store, "SELECT excerpt FROM quarantine")[0]["excerpt"]
    assert "[REDACTED:github_token]" in excerpt
