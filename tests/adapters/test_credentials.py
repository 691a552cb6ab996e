"""Where the terminal client finds the API and its token, and that a stored token goes only where it was stored for."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from adapters.credentials import Credentials, login_file, resolve, save_login
from core.contracts.config import Settings
from core.contracts.localfiles import read_private, write_private


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "var"


def up_files(settings: Settings, url: str, token: str) -> None:
    settings.api_url_file.parent.mkdir(parents=True, exist_ok=True)
    settings.api_url_file.write_text(url)
    write_private(settings.local_token_file, token + "\n")


def test_settings_then_login_then_what_up_left(home):
    settings = Settings(home=home)
    assert resolve(settings) == Credentials("", "")
    up_files(settings, "http://127.0.0.1:8765", "kr_local")
    assert resolve(settings) == Credentials("http://127.0.0.1:8765", "kr_local")
    save_login("https://kr.example.org/", "kr_login")
    assert resolve(settings) == Credentials("https://kr.example.org", "kr_login")
    explicit = Settings(home=home, api_url="http://127.0.0.1:8765", token="")
    assert resolve(explicit) == Credentials("http://127.0.0.1:8765", "kr_local")
    assert resolve(Settings(home=home, token="kr_env")).token == "kr_env"


def test_a_stored_token_is_never_sent_to_another_api(home):
    up_files(Settings(home=home), "http://127.0.0.1:8765", "kr_local")
    save_login("https://kr.example.org", "kr_login")
    elsewhere = resolve(Settings(home=home, api_url="http://attacker.example:80"))
    assert elsewhere == Credentials("http://attacker.example:80", "")


def test_secret_files_are_owner_only_and_others_are_ignored(home, tmp_path):
    path = save_login("https://kr.example.org", "kr_login")
    assert path == login_file() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    shared = tmp_path / "shared.token"
    shared.write_text("kr_seen_by_all")
    os.chmod(shared, 0o644)
    assert read_private(shared) == ""
    os.chmod(shared, 0o600)
    assert read_private(shared) == "kr_seen_by_all"
    assert read_private(tmp_path / "missing") == ""
    assert not list(path.parent.glob(".*.tmp"))  # written whole, no partial file left


def test_the_client_finds_the_kernelrank_up_started_from_another_folder(home, tmp_path, monkeypatch):
    from core.contracts.config import local_home_file

    started = Settings(home=home)
    up_files(started, "http://127.0.0.1:8765", "kr_local")
    local_home_file().parent.mkdir(parents=True, exist_ok=True)
    local_home_file().write_text(str(home.resolve()))  # what `kernelrank up` notes
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert resolve(Settings(home=Path("var"))) == Credentials("http://127.0.0.1:8765", "kr_local")


def test_the_local_user_without_user_is_the_login_name_not_anonymous(monkeypatch, tmp_path):
    import getpass

    from core.contracts.config import load_settings

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("KERNELRANK_USER", raising=False)
    monkeypatch.chdir(tmp_path)
    assert load_settings().user == getpass.getuser() != "anonymous"
