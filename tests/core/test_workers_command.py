"""``kernelrank workers add|revoke|list`` on a secrets folder with no server running (tests/e2e/test_up_bus.py runs
it against a running ``kernelrank up``): what it writes and says, and one sentence for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.contracts import issued_workers
from core.contracts.config import load_settings
from core.launch.workers import main


@pytest.fixture
def settings(tmp_path: Path):
    return load_settings({"KERNELRANK_HOME": str(tmp_path / "var")}, config_file=tmp_path / "none.toml", dotenv=None)


def test_add_list_and_revoke_a_worker_without_printing_its_secrets(settings, capsys) -> None:
    assert main(["add", "gpu-box-1", "--pool", "H100,B200"], settings) == 0
    said = capsys.readouterr().out
    credential = json.loads(issued_workers.credential_file(settings.secrets_dir, "gpu-box-1").read_text())
    assert credential["pools"] == ["H100", "B200"] and "No embedded nats-server runs here" in said
    assert credential["password"] not in said and credential["key"] not in said
    users = json.loads((settings.secrets_dir / "nats.conf").read_text())["authorization"]["users"]
    assert "gpu-box-1" in {u["user"] for u in users}
    assert main(["list"], settings) == 0
    assert "gpu-box-1" in capsys.readouterr().out
    assert main(["revoke", "gpu-box-1"], settings) == 0
    users = json.loads((settings.secrets_dir / "nats.conf").read_text())["authorization"]["users"]
    assert "gpu-box-1" not in {u["user"] for u in users}
    assert main(["list"], settings) == 0
    assert "revoked" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        (["add", "gpu box", "--pool", "H100"], "cannot name a worker"),
        (["add", "gpu-1", "--pool", ","], "GPU pools"),
        (["revoke", "nobody"], "no live worker called 'nobody'"),
    ],
)
def test_bad_input_gets_one_sentence(settings, capsys, argv: list[str], sentence: str) -> None:
    assert main(argv, settings) == 2
    err = capsys.readouterr().err
    assert sentence in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_worker_for_an_operator_mode_nats_gets_a_key_file_and_no_user_of_ours(settings, capsys) -> None:
    assert main(["add", "gpu-box-2", "--pool", "H100", "--operator-nats"], settings) == 0
    said = capsys.readouterr().out
    path = issued_workers.credential_file(settings.secrets_dir, "gpu-box-2")
    key_file = json.loads(path.read_text())
    assert set(key_file) == {"user", "key", "pools"} and key_file["key"] not in said
    assert f"KERNELRANK_WORKER_KEY_FILE=/path/to/{path.name}" in said and "gpu-box-2.creds" in said
    assert not (settings.secrets_dir / "nats.conf").exists()  # no NATS user of ours to write
    assert main(["list"], settings) == 0
    assert "operator-mode NATS" in capsys.readouterr().out
    assert main(["revoke", "gpu-box-2"], settings) == 0
    assert "nsc revocations add-user --name gpu-box-2" in capsys.readouterr().out
    assert not path.exists()
