"""The Slack adapter's settings, taken from kernelrank's ``Settings`` and checked before anything starts.

Socket Mode (the default) needs the bot token and an app-level token; HTTP mode needs the bot token and
the signing secret, without which anyone could forge requests. Tokens are never logged: ``SlackConfig``
masks them in its ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from core.contracts.config import ConfigError, Settings

SLACK_FILES_HOST = "files.slack.com"  # where url_private_download points on real Slack


@dataclass(frozen=True)
class SlackConfig:
    bot_token: str = field(repr=False)
    api_url: str
    command: str
    max_source_bytes: int
    request_timeout_s: float
    app_token: str = field(default="", repr=False)
    signing_secret: str = field(default="", repr=False)
    http_port: int = 0  # > 0: serve Slack's HTTP requests on this port instead of Socket Mode
    http_host: str = "127.0.0.1"  # behind a TLS reverse proxy; Slack only calls https URLs

    @property
    def http_mode(self) -> bool:
        return self.http_port > 0

    def file_host_allowed(self, url: str) -> bool:
        """Only Slack's own file host (or the configured API's host) ever receives the bot token."""
        parts = urlsplit(url)
        api = urlsplit(self.api_url)
        if parts.hostname == api.hostname and parts.port == api.port:
            return parts.scheme == api.scheme
        return parts.scheme == "https" and parts.hostname == SLACK_FILES_HOST


def slack_enabled(settings: Settings) -> bool:
    return bool(settings.slack_bot_token)


def slack_config(settings: Settings, *, http_port: int | None = None, http_host: str = "127.0.0.1") -> SlackConfig:
    """The adapter's settings, or ``ConfigError`` naming what is missing and where to get it."""
    port = settings.slack_http_port if http_port is None else http_port
    if not settings.slack_bot_token.startswith("xoxb-"):
        raise ConfigError(
            "SLACK_BOT_TOKEN must be the app's bot token (xoxb-...): Slack app settings > "
            "OAuth & Permissions > Bot User OAuth Token."
        )
    if port > 0 and not settings.slack_signing_secret:
        raise ConfigError(
            "HTTP mode needs SLACK_SIGNING_SECRET (Slack app settings > Basic Information > "
            "Signing Secret) so forged requests are refused."
        )
    if port <= 0 and not settings.slack_app_token.startswith("xapp-"):
        raise ConfigError(
            "Socket Mode needs SLACK_APP_TOKEN, an app-level token (xapp-...) with the "
            "connections:write scope; or serve HTTP with --http --port P and SLACK_SIGNING_SECRET."
        )
    command = settings.slack_command if settings.slack_command.startswith("/") else "/" + settings.slack_command
    api_url = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
    if urlsplit(api_url).scheme not in ("http", "https"):
        raise ConfigError(f"KERNELRANK_SLACK_API_URL must be an http(s) URL, not {settings.slack_api_url!r}.")
    return SlackConfig(
        bot_token=settings.slack_bot_token,
        app_token=settings.slack_app_token,
        signing_secret=settings.slack_signing_secret,
        api_url=api_url,
        command=command,
        max_source_bytes=settings.max_source_bytes,
        request_timeout_s=settings.request_timeout_s,
        http_port=max(port, 0),
        http_host=http_host,
    )
