"""Which bus credentials a process uses, what ``kernelrank up`` hands each child, and how reports are signed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from core.contracts import signing
from core.contracts.config import ConfigError, Settings, load_settings
from core.contracts.credentials import BusCredentials, embedded_server_config, for_role, result_secret
from core.contracts.messages import RunProgress, RunResult, decode, encode
from core.contracts.roles import Role
from core.launch.up import role_env
from harness.result import EvalResult, Mode, Progress, Status


def settings(tmp_path: Path, **environ: str) -> Settings:
    return load_settings(
        {"KERNELRANK_HOME": str(tmp_path / "var"), **environ}, config_file=tmp_path / "none.toml", dotenv=None
    )


def test_credentials_come_from_settings_then_a_file_or_folder_then_what_up_made(tmp_path) -> None:
    assert for_role(settings(tmp_path), Role.WORKER) == BusCredentials(Role.WORKER)  # none: an open server
    embedded_server_config(tmp_path / "var" / "secrets")
    made = for_role(settings(tmp_path), Role.WORKER)
    assert made.user == "kernelrank-worker" and len(made.password) >= 40
    folder = tmp_path / "creds"
    folder.mkdir()
    (folder / "slack.creds").write_text("-----BEGIN NATS USER JWT-----\n")
    (folder / "api.json").write_text(json.dumps({"user": "u", "password": "p"}))
    given = settings(tmp_path, KERNELRANK_NATS_CREDENTIALS=str(folder))
    assert for_role(given, Role.SLACK).creds_file == folder / "slack.creds"
    assert for_role(given, Role.API) == BusCredentials(Role.API, user="u", password="p")
    with pytest.raises(ConfigError, match="no credentials for the discord role"):
        for_role(given, Role.DISCORD)
    (folder / "seed.nk").write_text("SUA...")
    assert for_role(settings(tmp_path, KERNELRANK_NATS_CREDENTIALS=str(folder / "seed.nk")), Role.CORE).nkey_file
    explicit = settings(
        tmp_path,
        KERNELRANK_NATS_USER="ops",
        KERNELRANK_NATS_PASSWORD="hunter2",
        KERNELRANK_NATS_CREDENTIALS=str(folder),
    )
    assert for_role(explicit, Role.CORE) == BusCredentials(Role.CORE, user="ops", password="hunter2")
    assert "hunter2" not in repr(explicit) and "hunter2" not in repr(for_role(explicit, Role.CORE))


def test_an_unreadable_credentials_file_is_named(tmp_path) -> None:
    bad = tmp_path / "worker.json"
    bad.write_text("not json")
    with pytest.raises(ConfigError, match="worker.json"):
        for_role(settings(tmp_path, KERNELRANK_NATS_CREDENTIALS=str(bad)), Role.WORKER)


def test_each_child_of_up_gets_its_own_credentials_and_no_other_roles_secrets(tmp_path) -> None:
    given = settings(tmp_path)
    env = {
        "PATH": "/bin",
        "DISCORD_TOKEN": "discord-secret",
        "SLACK_BOT_TOKEN": "xoxb-secret",
        "GITHUB_TOKEN": "github-secret",
        "KERNELRANK_RESULT_SECRET": "result-secret",
        "KERNELRANK_NATS_PASSWORD": "inherited",
    }
    worker = role_env(env, given, Role.WORKER, embedded=True)
    assert worker["KERNELRANK_NATS_CREDENTIALS"] == str(given.secrets_dir / "worker.json")
    assert worker["GITHUB_TOKEN"] == "github-secret" and worker["PATH"] == "/bin"
    assert worker["DISCORD_TOKEN"] == worker["SLACK_BOT_TOKEN"] == worker["KERNELRANK_RESULT_SECRET"] == ""
    assert worker["KERNELRANK_NATS_PASSWORD"] == ""
    discord = role_env(env, given, Role.DISCORD, embedded=True)
    assert discord["DISCORD_TOKEN"] == "discord-secret" and discord["GITHUB_TOKEN"] == ""
    assert role_env(env, given, Role.CORE, embedded=True)["KERNELRANK_RESULT_SECRET"] == "result-secret"
    external = role_env(env, given, Role.CORE, embedded=False)  # an external NATS: its settings as given
    assert "KERNELRANK_NATS_CREDENTIALS" not in external and external["KERNELRANK_NATS_PASSWORD"] == "inherited"


def test_the_result_secret_is_made_once_owner_only_unless_given(tmp_path) -> None:
    made = result_secret(settings(tmp_path))
    assert len(made) == 64 and result_secret(settings(tmp_path)) == made
    key_file = tmp_path / "var" / "secrets" / "result.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert result_secret(settings(tmp_path, KERNELRANK_RESULT_SECRET="shared")) == b"shared"


def result(**fields) -> RunResult:
    return RunResult(
        run_id="r1",
        submission_id=4,
        gpu="H100",
        worker="w1",
        attempts=2,
        result=EvalResult(status=Status.PASSED, mode=Mode.RANKED, problem="p", score_us=12.5),
        **fields,
    )


def test_a_signature_holds_for_the_message_as_sent_and_for_nothing_else() -> None:
    key = signing.run_key(b"secret", "r1")
    assert key != signing.run_key(b"secret", "r2") and key != signing.run_key(b"other", "r1")
    signed = signing.sign(result(), key)
    received = decode(RunResult, encode(signed))
    assert signing.verify(received, key)
    assert not signing.verify(received, signing.run_key(b"secret", "r2"))
    assert not signing.verify(result(), key)  # unsigned
    for change in ({"attempts": 3}, {"worker": "w2"}, {"gpu": "A100"}, {"cost_usd": 0.1}):
        tampered = decode(RunResult, encode(signed))
        for name, value in change.items():
            setattr(tampered, name, value)
        assert not signing.verify(tampered, key), change
    faster = decode(RunResult, encode(signed))
    faster.result.score_us = 0.5
    assert not signing.verify(faster, key)
    progress = signing.sign(RunProgress("r1", 4, "H100", Progress(stage="started"), attempt=2), key)
    assert signing.verify(decode(RunProgress, encode(progress)), key)
    progress.attempt = 3
    assert not signing.verify(progress, key)


def test_a_value_the_codec_normalises_does_not_break_a_genuine_signature() -> None:
    key = signing.run_key(b"secret", "r1")
    signed = signing.sign(result(cost_usd=1), key)  # an int where the wire reads a float
    assert signing.verify(decode(RunResult, encode(signed)), key)
