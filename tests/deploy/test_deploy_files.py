"""The deployment under deploy/ is checked, not only written: the NATS node configuration by nats-server itself
(``--config FILE -t``) with each node's environment and the users ``kernelrank cluster-users`` writes; the systemd
units parsed, their commands, environment files and settings held to what exists, and verified by
``systemd-analyze verify`` where this machine has it."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.contracts.config import Settings, env_name
from core.launch.cluster import write_accounts
from core.launch.natsserver import find_executable

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
PREFIX = "/opt/kernelrank/.venv/bin/"  # where docs/deploy.md installs kernelrank (and the nats-server wheel)
PROCESSES = {"core", "api", "worker", "discord", "slack"}  # kernelrank subcommands a unit may run
SETTINGS = {env_name(f.name) for f in dataclasses.fields(Settings)}
NATS_ENV = DEPLOY / "env" / "nats.env.example"


def env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


def check_node(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    config = folder / "kernelrank-nats.conf"
    return subprocess.run(
        [str(find_executable()), "--config", str(config), "-t"], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def node_folder(tmp_path: Path) -> Path:
    """/etc/kernelrank/nats as docs/deploy.md fills it: the node configuration and the accounts beside it."""
    folder = tmp_path / "nats"
    folder.mkdir()
    shutil.copy(DEPLOY / "nats" / "kernelrank-nats.conf", folder)
    write_accounts(tmp_path / "secrets", folder / "accounts.conf")
    return folder


def test_nats_server_accepts_the_node_configuration_with_each_nodes_environment(node_folder: Path, tmp_path: Path):
    for node in ("nats-1", "nats-2", "nats-3"):
        env = {**env_file(NATS_ENV), "NATS_SERVER_NAME": node, "NATS_STORE_DIR": str(tmp_path / node)}
        checked = check_node(node_folder, env)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_node_missing_its_environment_is_refused(node_folder: Path):
    env = {key: value for key, value in env_file(NATS_ENV).items() if key != "NATS_ROUTE_PASSWORD"}
    checked = check_node(node_folder, env)
    assert checked.returncode != 0 and "NATS_ROUTE_PASSWORD" in checked.stdout + checked.stderr


def test_the_accounts_file_holds_every_role_in_a_jetstream_account(node_folder: Path):
    text = (node_folder / "accounts.conf").read_text()
    assert '"jetstream": "enabled"' in text
    assert all(f'"user": "kernelrank-{role}"' in text for role in ("core", "api", "discord", "slack"))


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit's sections and their keys (a key may repeat); ``AssertionError`` for a line systemd would not read."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith(("#", ";")):
            continue
        if match := re.fullmatch(r"\[(\w+)\]", line):
            current = sections.setdefault(match.group(1), {})
            continue
        key, sep, value = line.partition("=")
        assert current is not None and sep and re.fullmatch(r"[A-Za-z]+", key), f"{path.name}:{number}: {line!r}"
        current.setdefault(key, []).append(value)
    return sections


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_each_unit_runs_a_kernelrank_process_with_files_and_settings_that_exist(unit: Path):
    sections = parse_unit(unit)
    assert set(sections) == {"Unit", "Service", "Install"}
    (command,) = sections["Service"]["ExecStart"]
    program, *args = command.split()
    assert program.startswith(PREFIX)
    assert program == PREFIX + "nats-server" or (program == PREFIX + "kernelrank" and args[0] in PROCESSES)
    for path in sections["Service"].get("EnvironmentFile", []):
        assert (DEPLOY / "env" / (Path(path).name + ".example")).is_file(), f"{unit.name}: no example of {path}"
    variables = [v.split("=", 1)[0] for v in sections["Service"].get("Environment", [])]
    for path in sections["Service"].get("EnvironmentFile", []):
        variables += env_file(DEPLOY / "env" / (Path(path).name + ".example"))
    used_by_command = set(re.findall(r"\$\{(\w+)\}", command))
    unknown = {v for v in variables if v.startswith("KERNELRANK_") and v not in SETTINGS | used_by_command}
    assert not unknown, f"{unit.name} sets settings kernelrank does not have: {unknown}"
    assert sections["Install"]["WantedBy"] == ["multi-user.target"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not on this machine")
def test_systemd_verifies_every_unit(tmp_path: Path):
    """``systemd-analyze verify`` on each unit, its programs pointed at this environment's (it checks they run),
    a template verified as one of its instances."""
    here = str(Path(sys.executable).parent) + "/"
    names = []
    for unit in UNITS:
        name = unit.name.replace("@.", "@0.")
        (tmp_path / name).write_text(unit.read_text().replace(PREFIX, here))
        names.append(str(tmp_path / name))
    verified = subprocess.run(["systemd-analyze", "verify", *names], capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr
