"""Which bus credentials a process uses, what ``kernelrank up`` hands each child, and how reports are signed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from core.contracts import issued_workers, signing
from core.contracts.config import ConfigError, Settings, load_settings
from core.contracts.credentials import BusCredentials, embedded_server_config, for_role, result_secret
from core.contracts.gpus import local_pools
from core.contracts.messages import RunProgress, RunResult, decode, encode
from core.contracts.roles import Role
from core.launch.up import _local_workers, role_env
from harness.result import EvalResult, Mode, Progress, Status


def settings(tmp_path: Path, **environ: str) -> Settings:
    return load_settings(
        {"KERNELRANK_HOME": str(tmp_path / "var"), **environ}, config_file=tmp_path / "none.toml", dotenv=None
    )


def test_credentials_come_from_settings_then_a_file_or_folder_then_what_up_made(tmp_path) -> None:
    assert for_role(settings(tmp_path), Role.API) == BusCredentials(Role.API)  # none: an open server
    embedded_server_config(tmp_path / "var" / "secrets")
    made = for_role(settings(tmp_path), Role.API)
    assert made.user == "kernelrank-api" and len(made.password) >= 40
    assert for_role(settings(tmp_path), Role.WORKER) == BusCredentials(Role.WORKER)  # no role-wide worker user
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


def test_a_worker_is_issued_its_own_user_key_pools_and_inbox(tmp_path) -> None:
    given = settings(tmp_path)
    path = issued_workers.issue(given.secrets_dir, "gpu-box-1", ["H100", "B200"], result_secret(given))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    worker = for_role(settings(tmp_path, KERNELRANK_NATS_CREDENTIALS=str(path)), Role.WORKER)
    assert (worker.user, worker.pools) == ("gpu-box-1", ("H100", "B200"))
    assert worker.key == signing.worker_key(result_secret(given), "gpu-box-1") and worker.key not in repr(worker)
    assert worker.connect_options()["inbox_prefix"] == "_INBOX.worker.gpu-box-1"
    users = json.loads(embedded_server_config(given.secrets_dir).read_text())["authorization"]["users"]
    (user,) = [u for u in users if u["user"] == "gpu-box-1"]
    assert user["password"].startswith("$2") and worker.password not in json.dumps(users)
    assert user["permissions"]["subscribe"]["allow"] == ["_INBOX.worker.gpu-box-1.>"]
    with pytest.raises(ConfigError, match="exists already"):
        issued_workers.issue(given.secrets_dir, "gpu-box-1", ["H100"], result_secret(given))
    for bad in ("kernelrank-core", "a.b", "", "x" * 64, "w*"):
        with pytest.raises(ConfigError, match="cannot name a worker"):
            issued_workers.issue(given.secrets_dir, bad, ["H100"], result_secret(given))
    with pytest.raises(ConfigError, match="GPU pools"):
        issued_workers.issue(given.secrets_dir, "gpu-box-2", ["H100 80GB"], result_secret(given))


def test_up_issues_each_local_worker_its_own_credentials_once(tmp_path) -> None:
    given = settings(tmp_path)
    first = _local_workers(given, embedded=True)
    assert {pool for pool, _ in first} == set(local_pools())
    path = first[next(iter(first))]
    credential = json.loads(path.read_text())
    assert credential["user"].startswith("local-") and credential["pools"] == [next(iter(first))[0]]
    assert _local_workers(given, embedded=True) == first and json.loads(path.read_text()) == credential
    assert set(_local_workers(given, embedded=False).values()) == {None}  # a NATS of one's own: as configured


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


def test_a_report_signed_for_one_worker_holds_for_no_other() -> None:
    run_key = signing.run_key(b"secret", "r1")
    mine = signing.report_key(run_key, signing.worker_key(b"secret", "w1"))
    theirs = signing.report_key(run_key, signing.worker_key(b"secret", "w2"))
    assert len({run_key, mine, theirs}) == 3 and signing.report_key(run_key, "") == run_key
    assert not signing.verify(decode(RunResult, encode(signing.sign(result(), mine))), theirs)


def test_each_attempt_has_its_own_key_and_each_grant_one_holder() -> None:
    run_key = signing.run_key(b"secret", "r1")
    assert len({run_key, signing.attempt_key(run_key, 1), signing.attempt_key(run_key, 2)}) == 3
    grant = signing.grant(b"secret", "w1", "r1", 1, "$JS.ACK.JOBS.runners-CPU.1.5.5.1.0")
    others = [
        signing.grant(b"secret", "w2", "r1", 1, "$JS.ACK.JOBS.runners-CPU.1.5.5.1.0"),
        signing.grant(b"secret", "w1", "r1", 2, "$JS.ACK.JOBS.runners-CPU.1.5.5.1.0"),
        signing.grant(b"secret", "w1", "r1", 1, "$JS.ACK.JOBS.runners-CPU.2.5.6.1.0"),
        signing.grant(b"other", "w1", "r1", 1, "$JS.ACK.JOBS.runners-CPU.1.5.5.1.0"),
    ]
    assert grant not in others and len(set(others)) == 4


def test_a_value_the_codec_normalises_does_not_break_a_genuine_signature() -> None:
    key = signing.run_key(b"secret", "r1")
    signed = signing.sign(result(cost_usd=1), key)  # an int where the wire reads a float
    assert signing.verify(decode(RunResult, encode(signed)), key)
