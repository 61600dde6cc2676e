"""Answers from a logging endpoint that is not quite the API, and secrets in what it says:
each is one line and exit 2, never an internal error, and no token or password is printed
(``JOBDOCTOR_DEBUG=1`` included). The real google-cloud-logging client against the test server
on 127.0.0.1 (tests/logging_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli.app import app
from analyzer.report.redact import redact
from tests.logging_server import Failure, LoggingServer, load_entries

pytest.importorskip("google.cloud.logging")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "user-code-exit1.jsonl"
TOKEN = "ya29.a0AfB_byC-secret-token-0123456789"
PASSWORD = "hunter2-pa55"
WINDOW = ["--start", "2024-04-01T00:00:00Z", "--end", "2024-04-10T00:00:00Z"]


def _diagnose(endpoint: str, *, debug: bool = False) -> tuple[int, str]:
    entries = load_entries(SAMPLE)
    labels = entries[0]["resource"]["labels"]
    result = CliRunner().invoke(
        app,
        [
            "diagnose",
            "--project",
            labels["project_id"],
            "--job-id",
            labels["job_id"],
            "--api-endpoint",
            endpoint,
            *WINDOW,
        ],
        env={"JOBDOCTOR_DEBUG": "1"} if debug else {"JOBDOCTOR_DEBUG": ""},
    )
    return result.exit_code, result.stderr + result.stdout


# Each answer, and what the one line about it says.
ANSWERS = [
    (Failure.raw_answer(200, b"<html><body>Sign in to the proxy</body></html>"), "is not JSON"),
    (Failure.raw_answer(200, b"", "application/json"), "not an object"),
    (Failure(200, [1, 2, 3]), "is a JSON list, not an object"),
    (Failure(200, {"entries": "none"}), "entries that are not a list"),
    (Failure(200, {"entries": [], "nextPageToken": {"x": 1}}), "nextPageToken that is not"),
    (Failure(200, {"entries": [], "nextPageToken": 12345}), "nextPageToken that is not"),
    (Failure.unauthenticated(TOKEN), "credentials rejected"),
]


@pytest.mark.parametrize(("answer", "said"), ANSWERS, ids=lambda a: getattr(a, "status", a))
def test_an_odd_answer_is_one_line_and_exit_2(answer: Failure, said: str) -> None:
    with LoggingServer(entries=load_entries(SAMPLE)) as server:
        server.fail_next(answer)
        code, output = _diagnose(server.url)
    assert code == 2, output
    assert said in output and "internal error" not in output
    assert len(output.strip().splitlines()) == 1, output


@pytest.mark.parametrize("debug", [False, True])
def test_a_token_echoed_by_the_server_is_not_printed(debug: bool) -> None:
    with LoggingServer(entries=load_entries(SAMPLE)) as server:
        server.fail_next(Failure(500, Failure.unauthenticated(TOKEN).body))
        code, output = _diagnose(server.url, debug=debug)
    assert code == 2 and "Cloud Logging error 500" in output, output
    assert TOKEN not in output and "a0AfB" not in output
    assert "[redacted]" in output


@pytest.mark.parametrize("debug", [False, True])
def test_a_password_in_the_endpoint_is_not_printed(debug: bool) -> None:
    # Nothing listens on port 9 of loopback (discard): the client cannot connect.
    code, output = _diagnose(f"http://admin:{PASSWORD}@127.0.0.1:9/", debug=debug)
    assert code == 2, output
    assert "cannot reach Cloud Logging at http://[redacted]@127.0.0.1:9" in output
    assert PASSWORD not in output


def test_an_invalid_endpoint_with_a_password_is_named_without_it() -> None:
    code, output = _diagnose(f"ftp://admin:{PASSWORD}@example.com/")
    assert code == 2 and "invalid --api-endpoint" in output and PASSWORD not in output


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"Authorization: Bearer {TOKEN}", "Authorization: [redacted]"),
        (f'{{"access_token": "{TOKEN}", "expires_in": 3599}}', '"access_token": "[redacted]"'),
        (f"refresh_token={TOKEN}&grant_type=x", "refresh_token=[redacted]&grant_type=x"),
        (f"https://bob:{PASSWORD}@logging.example.com/v2", "https://[redacted]@logging"),
        (f"token {TOKEN} expired", "token [redacted] expired"),
        ("permission denied on project my-project-123", "my-project-123"),
    ],
)
def test_redact_cuts_out_secrets_and_keeps_the_rest(text: str, kept: str) -> None:
    assert kept in redact(text)
    assert TOKEN not in redact(text) and PASSWORD not in redact(text)


def test_an_http_401_of_the_api_is_credentials_rejected() -> None:
    # What the client raises after its own token refresh was answered 401 again.
    from google.api_core import exceptions as api

    from analyzer.engines.live.errors import translate

    error = translate(
        api.Unauthorized(f"Request had invalid credentials: Bearer {TOKEN}"),
        "my-project",
        "https://logging.googleapis.com",
    )
    assert error is not None and "credentials rejected" in str(error)
    assert TOKEN not in str(error)


def _service_account(tmp_path: Path, token_uri: str) -> Path:
    """A service-account key file whose token endpoint is ``token_uri``: google-auth signs a
    JWT with the key and posts it there for a token."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    path = tmp_path / "key.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "my-project",
                "private_key_id": "k1",
                "private_key": pem,
                "client_email": "reader@my-project.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": token_uri,
            }
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "answer",
    [
        Failure.raw_answer(200, b"<html>Sign in</html>"),
        Failure(200, []),
        Failure(200, {"access_token": TOKEN, "expires_in": "soon"}),
        Failure(200, {"token_type": "Bearer"}),
    ],
    ids=["html", "list", "bad-expiry", "no-token"],
)
def test_a_garbage_token_answer_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: Failure
) -> None:
    pytest.importorskip("cryptography")
    with LoggingServer(entries=load_entries(SAMPLE)) as server:
        server.token_answers.append(answer)
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(_service_account(tmp_path, server.token_uri))
        )
        # https: the real token is asked for (and the answer fails before any connection).
        code, output = _diagnose(server.url.replace("http://", "https://"))
        asked = [r.path for r in server.requests]
    assert asked == ["/token"]
    assert code == 2, output
    assert "internal error" not in output and len(output.strip().splitlines()) == 1, output
    assert "token" in output or "credentials rejected" in output
    assert TOKEN not in output


def test_follow_shows_the_controls_of_the_lines_it_quotes() -> None:
    entries = load_entries(SAMPLE)
    hostile = 0
    for entry in entries:
        text = json.dumps(entry)
        said = "Termination reason: Error"
        if said in text:
            # Inside what the rule captures (the reason), so the sentence quotes it.
            hostile += 1
            entry.clear()
            entry.update(
                json.loads(text.replace(said, said + "\\u001b]52;c;ZXZpbA==\\u0007\\u202e"))
            )
    assert hostile
    labels = entries[0]["resource"]["labels"]
    with LoggingServer(entries=entries) as server:
        result = CliRunner().invoke(
            app,
            [
                "diagnose",
                "--follow",
                "--project",
                labels["project_id"],
                "--job-id",
                labels["job_id"],
                "--api-endpoint",
                server.url,
                "--since",
                "3650d",
            ],
        )
    assert result.exit_code == 0, result.stderr
    assert "failure:" in result.stdout and "\\u001b]52;c;" in result.stdout
    assert not any(c in result.stdout for c in "\x1b\x07\r\u202e")
