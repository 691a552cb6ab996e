"""Settings: one object, read from defaults < TOML file < .env file < the environment.

Every setting has an environment name (``KERNELRANK_...``); the README's settings table lists them.
Secrets (chat tokens) are read here too, but never logged: ``Settings.__repr__`` masks them.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECRET_FIELDS = frozenset(
    {"slack_bot_token", "slack_app_token", "slack_signing_secret", "discord_token", "github_token"}
)
# Masked in reprs too, but read under their KERNELRANK_ names: a personal token, the one `kernelrank up` issued,
# this process's NATS password and the core's result-signing secret
MASKED_FIELDS = SECRET_FIELDS | {"token", "local_token_id", "nats_password", "result_secret"}

# Modal's list prices in dollars per GPU-second (docs/runners.md says where they come from); check
# modal.com/pricing and override with KERNELRANK_GPU_PRICES or a [gpu_prices] table in kernelrank.toml.
MODAL_PRICES = {
    "T4": 0.000164,
    "L4": 0.000222,
    "A10": 0.000306,
    "L40S": 0.000542,
    "A100-40GB": 0.000583,
    "A100-80GB": 0.000694,
    "H100": 0.001097,
    "H200": 0.001261,
    "B200": 0.001736,
}


class ConfigError(ValueError):
    """A setting has a value kernelrank cannot use; the message names the setting."""


@dataclass
class Settings:
    home: Path = Path("var")  # KERNELRANK_HOME: database, NATS store, logs
    nats_url: str = ""  # KERNELRANK_NATS_URL: join this NATS (a cluster: its URLs, comma-separated)
    nats_replicas: int = 1  # KERNELRANK_NATS_REPLICAS: copies of each stream and bucket (3 on a cluster)
    nats_user: str = ""  # KERNELRANK_NATS_USER: this process's NATS user
    nats_password: str = ""  # KERNELRANK_NATS_PASSWORD: its password
    nats_credentials: Path | None = None  # KERNELRANK_NATS_CREDENTIALS: file or folder
    worker_key_file: Path | None = None  # KERNELRANK_WORKER_KEY_FILE: a worker's key file beside .creds/.nk
    result_secret: str = ""  # KERNELRANK_RESULT_SECRET: result-signing secret shared by cores
    db_path: Path | None = None  # KERNELRANK_DB_PATH (default <home>/kernelrank.duckdb)
    problems_dir: Path = Path("problems")  # KERNELRANK_PROBLEMS_DIR: loaded as leaderboards on first start
    gpus: list[str] = field(default_factory=list)  # KERNELRANK_GPUS: pools to offer besides local ones
    user: str = ""  # KERNELRANK_USER: the terminal client's user name
    max_source_bytes: int = 256 * 1024  # KERNELRANK_MAX_SOURCE_BYTES
    rate_limit_per_minute: int = 10  # KERNELRANK_RATE_LIMIT_PER_MINUTE: submissions per person
    request_timeout_s: float = 10.0  # KERNELRANK_REQUEST_TIMEOUT_S: client -> core
    ack_wait_s: float = 30.0  # KERNELRANK_ACK_WAIT_S: worker heartbeat window
    max_deliver: int = 3  # KERNELRANK_MAX_DELIVER: attempts before a job is dead-lettered
    events_max_bytes: int = 1 << 30  # KERNELRANK_EVENTS_MAX_BYTES: results and progress kept (EVENTS), at most
    worker_concurrency: int = 1  # KERNELRANK_WORKER_CONCURRENCY: jobs at once per worker
    log_level: str = "INFO"  # KERNELRANK_LOG_LEVEL
    slack_bot_token: str = ""  # SLACK_BOT_TOKEN: xoxb-..., the Slack adapter runs when set
    slack_app_token: str = ""  # SLACK_APP_TOKEN: xapp-..., for Socket Mode
    slack_signing_secret: str = ""  # SLACK_SIGNING_SECRET: for HTTP mode
    slack_api_url: str = "https://slack.com/api/"  # KERNELRANK_SLACK_API_URL: Slack's Web API (a fake in tests)
    slack_command: str = "/kernelrank"  # KERNELRANK_SLACK_COMMAND: the slash command's name
    slack_http_port: int = 0  # KERNELRANK_SLACK_HTTP_PORT: serve HTTP mode on it (0: Socket Mode)
    discord_token: str = ""  # DISCORD_TOKEN
    # GPU pools and remote runners (docs/runners.md)
    pool_concurrency: dict[str, int] = field(default_factory=dict)  # KERNELRANK_POOL_CONCURRENCY: H100=8,T4=2
    gpu_prices: dict[str, float] = field(default_factory=lambda: dict(MODAL_PRICES))  # KERNELRANK_GPU_PRICES: $/GPU-s
    remote_queue_timeout_s: float = 1800.0  # KERNELRANK_REMOTE_QUEUE_TIMEOUT_S: wait for a remote GPU, at most
    modal_app: str = "kernelrank"  # KERNELRANK_MODAL_APP: the deployed Modal app's name
    modal_gpus: list[str] = field(default_factory=list)  # KERNELRANK_MODAL_GPUS: types `modal check` runs (all)
    modal_timeout_s: int = 1200  # KERNELRANK_MODAL_TIMEOUT_S: deployed functions' time limit
    github_token: str = ""  # GITHUB_TOKEN: fine-grained, actions read/write on the repo
    github_repo: str = ""  # KERNELRANK_GITHUB_REPO: owner/name holding the workflow
    github_workflow: str = "kernelrank-runner.yml"  # KERNELRANK_GITHUB_WORKFLOW: its file name (or id)
    github_ref: str = "main"  # KERNELRANK_GITHUB_REF: the branch the workflow runs from
    github_api_url: str = "https://api.github.com"  # KERNELRANK_GITHUB_API_URL: GitHub Enterprise's API instead

    def concurrency_for(self, gpu: str) -> int:
        """Jobs at once for one worker of ``gpu``: the pool's own setting, else the worker default."""
        return self.pool_concurrency.get(gpu, self.worker_concurrency)

    discord_api_base: str = ""  # KERNELRANK_DISCORD_API_BASE: a Discord-compatible API (tests)
    discord_guilds: list[str] = field(default_factory=list)  # KERNELRANK_DISCORD_GUILDS: sync commands here at start
    announce: list[str] = field(default_factory=list)  # KERNELRANK_ANNOUNCE: top-3 news, e.g. discord:123,slack:C1
    admin_channels: list[str] = field(default_factory=list)  # KERNELRANK_ADMIN_CHANNELS: reports and held entries
    # Challenges (docs/challenges.md)
    reminders: list[str] = field(default_factory=lambda: ["24", "1"])  # KERNELRANK_REMINDERS: hours before a close
    scheduler_tick_s: float = 5.0  # KERNELRANK_SCHEDULER_TICK_S: how often the scheduler looks
    verify_tolerance: float = 0.10  # KERNELRANK_VERIFY_TOLERANCE: a re-run may stray this far
    verify_timeout_s: float = 1800.0  # KERNELRANK_VERIFY_TIMEOUT_S: wait for the podium's re-runs
    close_wait_s: float = 1800.0  # KERNELRANK_CLOSE_WAIT_S: a close waits this long for runs sent before it
    # The HTTP API and the people who use it (docs/security.md)
    api_url: str = ""  # KERNELRANK_API_URL: the terminal client's API
    token: str = ""  # KERNELRANK_TOKEN: the client's personal token
    api_host: str = "127.0.0.1"  # KERNELRANK_API_HOST: where `kernelrank api` listens
    api_port: int = 8765  # KERNELRANK_API_PORT: its port (0: any free port)
    admins: list[str] = field(default_factory=list)  # KERNELRANK_ADMINS: e.g. discord:123,slack:U456,cli:ada
    local_token_id: str = ""  # KERNELRANK_LOCAL_TOKEN_ID: "prefix:sha256" of up's local token

    @property
    def database(self) -> Path:
        return self.db_path or self.home / "kernelrank.duckdb"

    @property
    def secrets_dir(self) -> Path:
        """Bus credentials and the result-signing secret, owner-only (core/contracts/credentials.py)."""
        return self.home / "secrets"

    @property
    def nats_store(self) -> Path:
        return self.home / "nats"

    @property
    def nats_url_file(self) -> Path:
        """Where ``kernelrank up`` publishes the URL of the NATS it started, for clients on this host."""
        return self.home / "run" / "nats.url"

    @property
    def api_url_file(self) -> Path:
        """Where the API process started by ``kernelrank up`` writes its URL, for clients on this host."""
        return self.home / "run" / "api.url"

    @property
    def local_token_file(self) -> Path:
        """The local user's token, written by ``kernelrank up`` (owner-only), for clients on this host."""
        return self.home / "run" / "api.token"

    def resolved_nats_url(self) -> str:
        if self.nats_url:
            return self.nats_url
        return self.nats_url_file.read_text().strip() if self.nats_url_file.is_file() else ""

    def __repr__(self) -> str:
        shown = {
            f.name: ("***" if f.name in MASKED_FIELDS and getattr(self, f.name) else getattr(self, f.name))
            for f in dataclasses.fields(self)
        }
        return f"Settings({shown})"


def env_name(field_name: str) -> str:
    return field_name.upper() if field_name in SECRET_FIELDS else f"KERNELRANK_{field_name.upper()}"


def user_config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's own settings folder, wherever kernelrank is started from: ``$XDG_CONFIG_HOME/kernelrank``, else
    ``~/.config/kernelrank`` (where ``kernelrank login`` keeps its file too)."""
    env = os.environ if environ is None else environ
    return Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "kernelrank"


def local_home_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where ``kernelrank up`` notes the (absolute) home it runs in, so the terminal client finds the local API from
    any folder: ``$XDG_STATE_HOME/kernelrank/local-home``, else under ``~/.local/state``."""
    env = os.environ if environ is None else environ
    return Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "kernelrank" / "local-home"


def load_settings(
    environ: dict[str, str] | None = None,
    config_file: Path | None = None,
    dotenv: Path | None = Path(".env"),
    user_config: Path | None = None,
) -> Settings:
    """Build ``Settings``; ``KERNELRANK_CONFIG`` names the TOML file, else ``kernelrank.toml`` here or in
    ``user_config`` (the user's folder, ``user_config_dir()``), whose ``.env`` lies under the one here."""
    environ = dict(os.environ if environ is None else environ)
    values: dict[str, Any] = {}
    here = Path("kernelrank.toml")
    toml_path = config_file or Path(
        environ.get("KERNELRANK_CONFIG")
        or (user_config / "kernelrank.toml" if user_config and not here.is_file() else here)
    )
    if toml_path.is_file():
        try:
            values.update(tomllib.loads(toml_path.read_text()))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{toml_path} is not valid TOML: {exc}") from exc
    by_env = {env_name(f.name): f.name for f in dataclasses.fields(Settings)}
    files = [user_config / ".env" if user_config else None, dotenv]
    layered = {k: v for path in files if path for k, v in read_dotenv(path).items()} | environ
    values.update({by_env[k]: v for k, v in layered.items() if k in by_env})
    unknown = set(values) - {f.name for f in dataclasses.fields(Settings)}
    if unknown:
        raise ConfigError(f"unknown settings in {toml_path}: {', '.join(sorted(unknown))}")
    settings = Settings(**{name: _convert(name, value) for name, value in values.items()})
    settings.gpu_prices = {**MODAL_PRICES, **settings.gpu_prices}  # a price given replaces one, keeps the rest
    if not settings.user:
        settings.user = environ.get("USER", "") or _login_name()
    return settings


def _login_name() -> str:
    """Who runs this process when ``$USER`` is unset (a container, a service): the login name the system knows."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no passwd entry for this uid
        return f"uid-{os.getuid()}"


def _convert(name: str, value: Any) -> Any:
    kind = Settings.__dataclass_fields__[name].type
    try:
        if "Path" in kind:
            return Path(value) if value not in ("", None) else None
        if kind.startswith("list"):
            return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value)
        if kind.startswith("dict"):
            number = float if "float" in kind else int
            return {str(k): number(v) for k, v in _pairs(value).items()}
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {env_name(name)} has an unusable value {value!r}: {exc}") from exc
    return str(value)


def _pairs(value: Any) -> dict[str, Any]:
    """A TOML table as it is, or ``"H100=8, T4=2"`` from the environment as a dict."""
    if isinstance(value, dict):
        return value
    pairs = {}
    for item in filter(None, (part.strip() for part in str(value).split(","))):
        key, sep, number = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{item!r} is not NAME=NUMBER")
        pairs[key.strip()] = number.strip()
    return pairs


def read_dotenv(path: Path) -> dict[str, str]:
    """A ``.env`` file as shells and python-dotenv read it: ``[export] NAME=value`` lines; a value in single quotes
    is taken as it is, one in double quotes with ``\\n``, ``\\"`` and ``\\\\`` escapes; an unquoted value ends
    before a `` #`` comment. Blank lines, comments and lines without ``=`` are skipped."""
    if not path.is_file():
        return {}
    pairs = {}
    for line in path.read_text().splitlines():
        match = _DOTENV_LINE.match(line)
        if match is None:
            continue
        key, value = match["key"], match["value"]
        if value.startswith("'") and "'" in value[1:]:
            value = value[1 : value.index("'", 1)]
        elif value.startswith('"') and (end := _closing_quote(value)) > 0:
            value = re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], value[1:end])
        else:
            value = re.split(r"\s#", value, maxsplit=1)[0].strip()
        pairs[key] = value
    return pairs


_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(?P<value>.*?)\s*$")


def _closing_quote(value: str) -> int:
    """Where the double-quoted value that ``value`` opens ends (an unescaped ``"``), or -1."""
    escaped = False
    for at, char in enumerate(value[1:], start=1):
        if char == '"' and not escaped:
            return at
        escaped = char == "\\" and not escaped
    return -1
