"""One planted secret of every kind the scrubber knows, and realistic hook payloads.

The secrets are fake but have the real shapes; each test greps stored bytes for the
`needle` (the part that must never survive).
"""

from __future__ import annotations

import msgspec


class Planted(msgspec.Struct):
    kind: str
    text: str
    needle: str


_PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDplantedPEMbody0123"

SECRETS: list[Planted] = [
    Planted(
        "private", "note <private>my home alarm code is 4471-PLANTED</private> ok", "4471-PLANTED"
    ),
    Planted(
        "private_key",
        f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM_BODY}\n-----END RSA PRIVATE KEY-----",
        _PEM_BODY,
    ),
    Planted(
        "private_key",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_PEM_BODY}ssh\n-----END OPENSSH PRIVATE KEY-----",
        _PEM_BODY + "ssh",
    ),
    Planted(
        "url_credentials",
        "git clone https://deploy:Pl4ntedUrlPass@github.com/x/y.git",
        "Pl4ntedUrlPass",
    ),
    Planted("url_credentials", "postgres://app:PgPl4nted99@db:5432/app", "PgPl4nted99"),
    Planted(
        "bearer",
        "curl -H 'Authorization: Bearer plantedBearerTok3n0123456789'",
        "plantedBearerTok3n0123456789",
    ),
    Planted(
        "openai_key",
        "OPENAI=sk-proj-PlantedOpenAIkey0123456789abcdefXYZ",
        "PlantedOpenAIkey0123456789",
    ),
    Planted(
        "openai_key", "key sk-PlantedLegacyOpenAI0123456789abcdef", "PlantedLegacyOpenAI0123456789"
    ),
    Planted(
        "anthropic_key",
        "export ANTHROPIC=sk-ant-api03-PlantedAnthropic0123456789abcdefgh",
        "PlantedAnthropic0123456789",
    ),
    Planted(
        "github_token",
        "token ghp_PlantedGithubPAT0123456789abcdefABCD",
        "PlantedGithubPAT0123456789",
    ),
    Planted(
        "github_token", "gho_PlantedGithubOAuth0123456789abcdefAB", "PlantedGithubOAuth0123456789"
    ),
    Planted(
        "github_token", "ghs_PlantedGithubServer0123456789abcdeAB", "PlantedGithubServer0123456789"
    ),
    Planted(
        "github_token", "ghu_PlantedGithubUser00123456789abcdeABC", "PlantedGithubUser00123456789"
    ),
    Planted(
        "github_token", "ghr_PlantedGithubRefresh0123456789abcdAB", "PlantedGithubRefresh0123456789"
    ),
    Planted(
        "github_token",
        "github_pat_11PLANTED0123456789_abcdefghijklmnopqrstuvwxyz0123456789",
        "11PLANTED0123456789_abcdefghijklmnop",
    ),
    Planted("aws_access_key", "aws_access_key_id AKIAPLANTED0123456AB", "AKIAPLANTED0123456AB"),
    Planted(
        "google_api_key",
        "maps AIzaSyPlantedGoogleKey0123456789abcdefg",
        "SyPlantedGoogleKey0123456789",
    ),
    Planted("slack_token", "slack xoxb-1234-5678-PlantedSlackBot01", "PlantedSlackBot01"),
    Planted("slack_token", "slack xoxp-9876-PlantedSlackUser01", "PlantedSlackUser01"),
    Planted("slack_token", "slack xoxa-2-PlantedSlackApp0001", "PlantedSlackApp0001"),
    Planted("gitlab_token", "glpat-PlantedGitlab0123456789ab", "PlantedGitlab0123456789ab"),
    Planted(
        "npm_token",
        "//registry.npmjs.org/:_authToken=npm_PlantedNpmToken0123456789abcdefghijklm",
        "PlantedNpmToken0123456789",
    ),
    Planted(
        "jwt",
        "cookie=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.PlantedJwtSignature0123",
        "PlantedJwtSignature0123",
    ),
    Planted("secret_assignment", "config api_key=PlantedGenericApiKey77", "PlantedGenericApiKey77"),
    Planted(
        "secret_assignment", 'settings = {"token": "PlantedGenericTok88"}', "PlantedGenericTok88"
    ),
    Planted("database-password", "DB_PASSWORD=PlantedPassw0rd99 ./run", "PlantedPassw0rd99"),
    Planted("secret_assignment", "password: 'PlantedYamlPass11'", "PlantedYamlPass11"),
]


def all_secrets_text() -> str:
    return "\n".join(s.text for s in SECRETS)


def tool_output(size: int, salt: str = "") -> str:
    """A plausible tool output of about `size` bytes (a test run log)."""
    line = f"tests/test_api.py::test_case_{salt} PASSED [ 42%] src/app/handlers.py:118 ok\n"
    return (line * (size // len(line) + 1))[:size]
