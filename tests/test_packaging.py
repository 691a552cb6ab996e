"""The packaging promises: the base install is the terminal client, the server's parts are extras, versions are
ranges with a lock file beside them, and the version lives in one place."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from core.contracts.version import __version__

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
SERVER_ONLY = ("nats", "duckdb", "starlette", "uvicorn", "sse_starlette", "discord", "slack_bolt", "slack_sdk",
               "aiohttp", "matplotlib", "torch", "bcrypt", "jinja2", "multipart")  # fmt: skip


def _name(requirement: str) -> str:
    return re.split(r"[<>=!\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_terminal_client_runs_without_the_servers_packages():
    """Every command of the client, imported with the server's packages made unimportable."""
    probe = f"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {SERVER_ONLY!r}:
            raise ImportError("server package " + name)
sys.meta_path.insert(0, Refuse())
import adapters.cli, adapters.completion, adapters.terminal, adapters.http_client, adapters.packing
from core.launch.main import main
assert main(["--version"]) == 0 and main(["help"]) == 0
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_base_dependencies_are_the_clients_and_ranges_not_pins():
    base = {_name(r) for r in PROJECT["dependencies"]}
    assert base == {"pyyaml", "httpx", "httpx-sse", "platformdirs"}
    extras = PROJECT["optional-dependencies"]
    assert {"server", "discord", "slack", "harness", "modal", "github"} <= set(extras)
    every = [*PROJECT["dependencies"], *(r for reqs in extras.values() for r in reqs)]
    assert [r for r in every if "==" in r] == ["ruff==0.17.6"]  # the one exact pin: it decides `make lint`


def test_the_lock_pins_every_dependency_and_the_version_has_one_home():
    locked = {
        _name(line): line.split("==")[1]
        for line in (REPO / "requirements.lock").read_text().splitlines()
        if line and not line.startswith("#")
    }
    named = {_name(r) for r in PROJECT["dependencies"]} | {
        _name(r) for reqs in PROJECT["optional-dependencies"].values() for r in reqs if not r.startswith("kernelrank")
    }
    assert named - {"torch"} <= set(locked)
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT
    assert f"## {__version__}" in (REPO / "CHANGELOG.md").read_text()
    assert all(
        (REPO / package / "py.typed").is_file() for package in ("adapters", "core", "harness", "runners", "storage")
    )
