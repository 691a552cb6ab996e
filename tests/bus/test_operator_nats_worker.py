"""A worker on an operator-mode NATS: it logs in with a ``.creds`` or ``.nk`` file made by the operator's own tooling
and signs its reports with the key file ``kernelrank workers add NAME --pool GPU --operator-nats`` wrote.

The server here is a real nats-server that asks for credentials (tests/conftest.py's ``authed_nats``), given one
more user: an nkey user with a worker's permissions, as an operator's configuration would hold it. The worker
logs in with that user's seed (``.nk``) and its key file, runs a job, and the core's own check
(``core.service.worker_reports``) takes its result; once the worker is revoked, the same result counts for nothing.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from worker_testkit import hand_out_jobs, running

from core.contracts import issued_workers, signing
from core.contracts.bus import Bus, Role
from core.contracts.config import ConfigError, Settings
from core.contracts.credentials import KEY_FILE_SETTING, for_role, read, result_secret
from core.contracts.messages import RunProgress
from core.contracts.roles import worker_permissions
from core.launch.natsserver import reload_config
from core.service.runs import RunBook
from core.service.worker_reports import Registry, ReportCheck
from harness.result import Progress
from runners.fake import FakeRunner
from runners.worker import Worker, check_credentials

nkeys = pytest.importorskip("nkeys")

GPU = "CPU"
NAME = "gpu-box-op"


def core_secret(secrets: Path) -> bytes:
    return result_secret(Settings(home=secrets.parent))


def issue_operator_worker(secrets: Path, name: str = NAME) -> Path:
    """``kernelrank workers add NAME --pool CPU --operator-nats``: the worker's key file."""
    return issued_workers.issue(secrets, name, [GPU], core_secret(secrets), operator_nats=True)


def nkey_user(folder: Path, name: str) -> tuple[Path, str]:
    """A fresh nkey user's seed file (``<name>.nk``, as ``nsc`` would hand it over) and its public key."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    path = folder / f"{name}.nk"
    path.write_bytes(seed + b"\n")
    return path, nkeys.from_seed(bytearray(seed)).public_key.decode()


def add_to_server(authed_nats, public_key: str, name: str) -> None:
    """Give the running server an nkey user with ``name``'s worker permissions (the operator's part)."""
    config = authed_nats.secrets / "nats.conf"
    conf = json.loads(config.read_text())
    permissions = worker_permissions(name, [GPU]).to_config()
    conf["authorization"]["users"].append({"nkey": public_key, "permissions": permissions})
    config.write_text(json.dumps(conf))
    assert reload_config(authed_nats.run_dir)


async def test_a_worker_on_an_nkey_login_with_its_key_file_signs_results_the_core_takes_until_revoked(
    authed_nats, make_job, eventually, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key_file = issue_operator_worker(authed_nats.secrets)
    assert "password" not in json.loads(key_file.read_text())
    assert NAME not in (authed_nats.secrets / "nats.conf").read_text()  # its NATS user is the operator's
    seed, public_key = nkey_user(tmp_path, NAME)
    add_to_server(authed_nats, public_key, NAME)
    settings = Settings(home=tmp_path / "worker-home", nats_credentials=seed, worker_key_file=key_file)
    credentials = for_role(settings, Role.WORKER)
    assert (credentials.nkey_file, credentials.worker_name, credentials.pools) == (seed, NAME, (GPU,))
    check_credentials(credentials, GPU)

    secret = core_secret(authed_nats.secrets)
    core = await authed_nats.connect(Role.CORE)
    await core.ensure_streams([GPU], ack_wait_s=5, max_deliver=3)
    await hand_out_jobs(core, [GPU], secret)
    worker_bus = await Bus.connect(authed_nats.url, "operator-worker", credentials)
    try:
        job = make_job()
        assert await core.publish_job(job)
        async with running(Worker(worker_bus, GPU, FakeRunner(), retry_delay_s=0.1, poll_s=0.2)):

            async def stored() -> bool:
                return await core.last_result(job.run_id) is not None

            await eventually(stored)
        result = await core.last_result(job.run_id)
        assert result is not None and result.worker == NAME
        registry = Registry(authed_nats.secrets)
        check = ReportCheck(secret, RunBook(), core, worker_keys=True, registry=registry)
        assert await check.result_counts(result)
        assert await check.has_result(job.run_id)

        issued_workers.revoke(authed_nats.secrets, NAME)  # `kernelrank workers revoke gpu-box-op`
        assert not issued_workers.credential_file(authed_nats.secrets, NAME).exists()
        with caplog.at_level(logging.WARNING, logger="core.service.loop"):
            assert not await check.result_counts(result)
            assert not await check.has_result(job.run_id)
            assert not check.progress_counts(await core.last_progress(NAME, job.run_id))
        told = [r for r in caplog.records if "was revoked" in r.getMessage()]
        assert len(told) == 1 and NAME in told[0].getMessage()  # said once, however many reports follow
    finally:
        await worker_bus.close()
        await core.close()


async def test_a_revoked_workers_report_is_dropped_while_another_workers_still_counts(bus: Bus, tmp_path: Path) -> None:
    """The core derives every key from the worker's name, so only the registry can tell it a name is revoked."""
    secrets = tmp_path / "secrets"
    secret = b"the core's secret"
    for name in ("w-gone", "w-kept"):
        issued_workers.issue(secrets, name, [GPU], secret, operator_nats=True)
    issued_workers.revoke(secrets, "w-gone")
    check = ReportCheck(secret, RunBook(), bus, worker_keys=True, registry=Registry(secrets))
    attempt_key = signing.attempt_key(signing.run_key(secret, "run-1"), 1)
    reports = {}
    for name in ("w-gone", "w-kept"):
        report = RunProgress("run-1", 1, GPU, Progress(stage="started"), worker=name)
        reports[name] = signing.sign(report, signing.report_key(attempt_key, signing.worker_key(secret, name)))
    assert not check.progress_counts(reports["w-gone"])
    assert check.progress_counts(reports["w-kept"])


def test_a_creds_login_takes_its_name_key_and_pools_from_the_key_file(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    key_file = issue_operator_worker(secrets)
    creds = tmp_path / f"{NAME}.creds"
    creds.write_text("-----BEGIN NATS USER JWT-----\n")
    credentials = for_role(Settings(home=tmp_path, nats_credentials=creds, worker_key_file=key_file), Role.WORKER)
    assert credentials.creds_file == creds and credentials.worker_name == NAME and not credentials.user
    assert credentials.key == signing.worker_key(core_secret(secrets), NAME)
    assert credentials.connect_options()["inbox_prefix"].endswith(NAME)
    assert "user" not in credentials.connect_options()  # the .creds file alone logs in
    with pytest.raises(ConfigError, match="was issued for CPU, not H100"):
        check_credentials(credentials, "H100")
    with pytest.raises(ConfigError, match=f"no signing key.*{KEY_FILE_SETTING}"):  # a .creds file alone
        check_credentials(for_role(Settings(home=tmp_path, nats_credentials=creds), Role.WORKER), GPU)
    # other roles ignore the setting
    assert for_role(Settings(home=tmp_path, nats_credentials=creds, worker_key_file=key_file), Role.CORE).key == ""


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "which does not exist: copy the key file `kernelrank workers add"),
        ("not json", "it is not JSON"),
        ('{"user": "w", "pools": ["CPU"]}', "it holds no signing key"),
        ('{"user": "w", "key": "' + "ab" * 32 + '", "pools": []}', "it lists no GPU pools"),
        ('{"key": "' + "ab" * 32 + '", "pools": ["CPU"]}', "it names no worker"),
        ("[]", "it is not a JSON object"),
    ],
)
def test_a_key_file_that_cannot_serve_says_so_in_one_sentence_naming_the_setting(
    tmp_path: Path, content: str | None, says: str
) -> None:
    key_file = tmp_path / "w.json"
    if content is not None:
        key_file.write_text(content)
    nk = tmp_path / "w.nk"
    nk.write_text("SUA...\n")
    with pytest.raises(ConfigError) as raised:
        for_role(Settings(home=tmp_path, nats_credentials=nk, worker_key_file=key_file), Role.WORKER)
    message = str(raised.value)
    assert message.startswith(f"{KEY_FILE_SETTING} names {key_file}") and says in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence


def test_a_key_file_beside_credentials_that_do_not_need_one_is_refused(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    key_file = issue_operator_worker(secrets)
    json_credential = issued_workers.issue(secrets, "w-json", [GPU], b"secret")
    with pytest.raises(ConfigError, match=f"carries its signing key already: unset {KEY_FILE_SETTING}"):
        for_role(Settings(home=tmp_path, nats_credentials=json_credential, worker_key_file=key_file), Role.WORKER)
    with pytest.raises(ConfigError, match="no NATS credentials to log in with"):
        for_role(Settings(home=tmp_path, worker_key_file=key_file), Role.WORKER)
    with pytest.raises(ConfigError, match="logs in to NATS as someone-else: give it the key file issued"):
        for_role(
            Settings(home=tmp_path, nats_user="someone-else", nats_password="p", worker_key_file=key_file),
            Role.WORKER,
        )
    with pytest.raises(ConfigError, match=f"goes in {KEY_FILE_SETTING}"):  # the key file given as the login
        read(key_file, Role.WORKER)
