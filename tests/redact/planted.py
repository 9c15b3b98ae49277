"""Realistic FAKE credentials, generated when the tests run (never committed as literals), each in
the contexts and encodings real logs hold them.

    from redact.planted import planted            # tests/ is on the test path
    for p in planted():                            # one Planted per kind of secret
        for encoding, text in p.variants.items():  # plain, json, json_in_json, command_json, base64
            ...                                    # after redaction: no p.needles in the text

``Planted.kind`` is the placeholder kind expected (``[REDACTED:<kind>]``); ``value`` the secret;
``text`` a line or output that holds it as a person would write it; ``needles`` the strings that
must not survive redaction (the value, or each body line of a PEM block). ``channel_texts`` gives
the same secret in the pipeline's channels (prompt, command, tool output, repository file) for
end-to-end tests.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from dataclasses import dataclass, field

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"


@dataclass(frozen=True)
class Planted:
    kind: str
    value: str
    text: str
    needles: tuple[str, ...]
    variants: dict[str, str] = field(default_factory=dict)

    def channel_texts(self) -> dict[str, str]:
        """The secret as a user prompt, a shell command, a tool output and a repository file."""
        return {"prompt": f"please use this: {self.text}", "command": f"echo '{self.text}' >> notes.txt",
                "tool_output": self.text, "file": f"# config\n{self.text}\n"}


def _b64url(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def _pem(rnd: random.Random, lines: int = 12, label: str = "RSA PRIVATE KEY") -> tuple[str, list[str]]:
    body = ["MIIEow" + "".join(rnd.choice(B64) for _ in range(58))]
    body += ["".join(rnd.choice(B64) for _ in range(64)) for _ in range(lines - 2)]
    body.append("".join(rnd.choice(B64) for _ in range(40)) + "==")
    return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----", body


def _variants(text: str) -> dict[str, str]:
    """``text`` as it appears in a log: plain; a JSON line's string; a tool output that is itself
    JSON-encoded in the line; a shell command in a function call's JSON arguments; base64."""
    inner = json.dumps({"output": text, "metadata": {"exit_code": 0, "duration_seconds": 0.1}})
    return {
        "plain": text,
        "json": json.dumps({"type": "function_call_output", "call_id": "call_1", "output": text}),
        "json_in_json": json.dumps({"type": "response_item", "payload": {"type": "function_call_output",
                                                                        "output": inner}}),
        "command_json": json.dumps({"type": "function_call", "name": "shell",
                                    "arguments": json.dumps({"command": ["bash", "-lc", text]})}),
        "base64": "data: " + base64.b64encode((text + "\n").encode()).decode(),
    }


def _pieces(value: str) -> tuple[str, ...]:
    """The lines of ``value`` that hold secret text: not a PEM block's armour lines, which a
    format-preserving pseudonym keeps (``-----BEGIN RSA PRIVATE KEY-----`` is no secret)."""
    return tuple(p for p in value.splitlines() if len(p) > 8 and not p.startswith("-----")) or (value,)


def planted(seed: int | str | None = None) -> list[Planted]:
    """One :class:`Planted` per kind of secret the redactor must catch; random unless ``seed``."""
    rnd = random.Random(seed)

    def pick(chars: str, n: int) -> str:
        return "".join(rnd.choice(chars) for _ in range(n))

    pem, body = _pem(rnd)
    head4 = "\n".join(pem.splitlines()[:4])
    jwt = (_b64url({"alg": "HS256", "typ": "JWT"}) + "." + _b64url({"sub": f"FAKE-{pick(ALNUM, 6)}",
                                                                   "iat": 1700000000}) + "." + pick(ALNUM + "_-", 43))
    aws_id, aws_secret = "AKIA" + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), pick(ALNUM, 38) + "/+"
    aiza = "AIza" + pick(ALNUM + "_-", 35)
    mysql_pw, pw = "Fk" + pick(ALNUM, 10) + "7!", "Fk" + pick(ALNUM, 12) + "9"
    api_key, sas = pick(ALNUM, 32), pick(ALNUM, 40) + "%3D"
    npm, django = str(uuid.UUID(int=rnd.getrandbits(128))), "django-insecure-" + pick(ALNUM + "!@#$%^&*(-_=+)", 50)
    key_id, client_secret = pick("0123456789abcdef", 40), pick(ALNUM, 24) + "9"
    db_pw = "Fk" + pick(ALNUM, 14) + "3"
    gcp = json.dumps({"type": "service_account", "project_id": "fake-project", "private_key_id": key_id,
                      "private_key": pem.replace("RSA PRIVATE", "PRIVATE") + "\n",
                      "client_email": "bot@fake-project.iam.gserviceaccount.com"}, indent=2)
    k8s = base64.b64encode((pem + "\n").encode()).decode()
    specs = [  # (kind, value, text, needles)
        ("jwt", jwt, f"the session cookie was {jwt}.", None),
        ("jwt", jwt, f"(see token {jwt})", None),
        ("google_api_key", aiza, f"Maps works with key {aiza}.", None),
        ("aws_secret_access_key", aws_secret, f"Use AWS creds {aws_id} / {aws_secret} for the upload",
         (aws_id, aws_secret)),
        ("private_key", pem, f"$ cat deploy.pem\n{pem}\n", _pieces(pem)),
        ("private_key", head4, f"$ head -4 key.pem\n{head4}", _pieces(head4)),
        ("private_key", k8s, f"data:\n  tls.crt: LS0tCg==\n  tls.key: {k8s}\n", (k8s[:60], k8s[-60:])),
        ("password", mysql_pw, f"mysql -u root -p{mysql_pw} -h 127.0.0.1 shop < dump.sql", None),
        ("password", pw, f"psql 'host=db user=app password={pw} dbname=shop'", None),
        ("api_key", api_key, f"curl -X POST https://api.example.invalid/v1 -d '{{\"api_key\": \"{api_key}\"}}'",
         None),
        ("azure_sas", sas, f"az storage blob upload --sas 'https://acct.blob.core.windows.net/c/f?sv=2022-11-02"
                           f"&ss=b&srt=o&sp=rw&se=2030-01-01T00:00:00Z&sig={sas}'", None),
        ("npm_token", npm, f"//registry.npmjs.org/:_authToken={npm}", None),
        ("secret_key", django, f"SECRET_KEY = '{django}'", None),
        ("private_key_id", key_id, gcp, (key_id, *_pieces(pem))),
        ("generic_secret", client_secret, f"client id 8842 and client secret {client_secret}", None),
        ("url_password", db_pw, f"OperationalError: could not connect to postgresql://app:{db_pw}@db:5432/shop",
         None),
        ("github_token", "ghp_" + pick(ALNUM, 36), None, None),
        ("openai_api_key", "sk-proj-" + pick(ALNUM + "_-", 48), None, None),
        ("anthropic_api_key", "sk-ant-api03-" + pick(ALNUM + "_-", 93) + "AA", None, None),
        ("slack_token", f"xoxb-{pick(string.digits, 12)}-{pick(string.digits, 12)}-{pick(ALNUM, 24)}", None, None),
        ("huggingface_token", "hf_" + pick(string.ascii_letters, 34), None, None),
        ("stripe_key", "sk_live_" + pick(ALNUM, 24), None, None),
    ]
    out = []
    for kind, value, text, needles in specs:
        text = text or f"export THE_KEY_FOR_CI={value} && ./deploy.sh"
        out.append(Planted(kind, value, text, tuple(needles or _pieces(value)), _variants(text)))
    return out
