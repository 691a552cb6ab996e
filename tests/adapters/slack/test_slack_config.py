"""The Slack adapter's settings: checked before start, secrets never shown, and `up` starts it only when set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from adapters.slack.config import slack_config
from core.contracts.config import ConfigError, Settings
from core.launch import up
from core.launch.main import main

BOT, APP, SECRET = "xoxb-1-2-abc", "xapp-1-A1-xyz", "s3cr3t-signing"


def test_socket_mode_needs_the_app_token_and_http_mode_the_signing_secret():
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN"):
        slack_config(Settings(slack_bot_token="", slack_app_token=APP))
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN"):
        slack_config(Settings(slack_bot_token=BOT))
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        slack_config(Settings(slack_bot_token=BOT), http_port=3000)
    socket = slack_config(Settings(slack_bot_token=BOT, slack_app_token=APP))
    assert not socket.http_mode and socket.command == "/kernelrank" and socket.api_url == "https://slack.com/api/"
    http = slack_config(
        Settings(
            slack_bot_token=BOT,
            slack_signing_secret=SECRET,
            slack_http_port=8080,
            slack_command="leaderboard",
            slack_api_url="http://127.0.0.1:9/api",
        )
    )
    assert http.http_mode and http.http_port == 8080
    assert http.command == "/leaderboard" and http.api_url == "http://127.0.0.1:9/api/"


def test_tokens_never_appear_in_reprs():
    config = slack_config(Settings(slack_bot_token=BOT, slack_app_token=APP, slack_signing_secret=SECRET))
    settings = Settings(slack_bot_token=BOT, slack_app_token=APP, slack_signing_secret=SECRET)
    for shown in (repr(config), repr(settings)):
        assert BOT not in shown and APP not in shown and SECRET not in shown


def test_the_bot_token_goes_only_to_slacks_file_host():
    config = slack_config(Settings(slack_bot_token=BOT, slack_app_token=APP))
    assert config.file_host_allowed("https://files.slack.com/files-pri/T1-F1/download/k.py")
    assert not config.file_host_allowed("http://files.slack.com/files-pri/T1-F1/download/k.py")
    assert not config.file_host_allowed("https://files.slack.com.evil.example/k.py")
    assert not config.file_host_allowed("https://evil.example/files-pri/T1-F1/download/k.py")
    fake = slack_config(Settings(slack_bot_token=BOT, slack_app_token=APP, slack_api_url="http://127.0.0.1:8123/api/"))
    assert fake.file_host_allowed("http://127.0.0.1:8123/files-pri/T1-F1/download/k.py")
    assert not fake.file_host_allowed("http://127.0.0.1:8124/files-pri/T1-F1/download/k.py")


def test_kernelrank_slack_says_what_is_missing(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "KERNELRANK_SLACK_HTTP_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT)
    assert main(["slack"]) == 2
    assert "SLACK_APP_TOKEN" in capsys.readouterr().err
    assert main(["slack", "--http", "--port", "3999"]) == 2
    assert "SLACK_SIGNING_SECRET" in capsys.readouterr().err
    monkeypatch.setenv("SLACK_APP_TOKEN", APP)
    monkeypatch.delenv("KERNELRANK_NATS_URL", raising=False)
    assert main(["slack"]) == 2
    err = capsys.readouterr().err
    assert "kernelrank up" in err and BOT not in err


def test_up_starts_the_slack_adapter_only_with_usable_credentials(capsys):
    exe, env = ["python", "-m", "core.launch.main"], {}
    assert up._chat_adapters(Settings(), exe, env) == []
    assert up._chat_adapters(Settings(slack_bot_token=BOT), exe, env) == []
    assert "Slack is not started" in capsys.readouterr().out
    (child,) = up._chat_adapters(Settings(slack_bot_token=BOT, slack_app_token=APP), exe, env)
    assert child.name == "slack" and child.argv == [*exe, "slack"]


def test_the_documented_manifest_matches_what_the_adapter_listens_for():
    doc = (Path(__file__).resolve().parents[3] / "docs" / "slack.md").read_text()
    manifest = yaml.safe_load(re.search(r"```yaml\n(.*?)```", doc, re.S).group(1))
    (command,) = manifest["features"]["slash_commands"]
    assert command["command"] == Settings().slack_command
    assert set(manifest["settings"]["event_subscriptions"]["bot_events"]) == {"app_mention", "message.im"}
    assert manifest["settings"]["socket_mode_enabled"] is True and manifest["settings"]["interactivity"]["is_enabled"]
    assert {"commands", "chat:write", "files:read", "files:write", "users:read", "im:write"} <= set(
        manifest["oauth_config"]["scopes"]["bot"]
    )
