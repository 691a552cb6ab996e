"""Where the terminal client finds the API and its personal token.

The API's URL, first found of: ``KERNELRANK_API_URL`` (environment, ``.env`` or ``kernelrank.toml``); the URL
``kernelrank login`` stored; the URL the API started by ``kernelrank up`` on this host wrote (``<home>/run/api.url``,
the home of these settings or the one ``up`` last noted in the user's state folder).
The token: ``KERNELRANK_TOKEN``; else the one ``kernelrank login`` stored, or the local user's token ``kernelrank up``
issued (``<home>/run/api.token``), each only when the URL is the one it was stored for: a stored token is never
sent anywhere else.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from core.contracts.config import Settings, local_home_file
from core.contracts.localfiles import read_private, write_private


@dataclass(frozen=True)
class Credentials:
    url: str
    token: str


def login_file() -> Path:
    """Where ``kernelrank login`` keeps the URL and the token (owner-only), e.g. ~/.config/kernelrank/login.json."""
    return platformdirs.user_config_path("kernelrank") / "login.json"


def stored_login() -> Credentials:
    try:
        data = json.loads(read_private(login_file()) or "{}")
    except ValueError:
        return Credentials("", "")
    if not isinstance(data, dict):
        return Credentials("", "")
    return Credentials(str(data.get("url") or ""), str(data.get("token") or ""))


def save_login(url: str, token: str) -> Path:
    path = login_file()
    write_private(path, json.dumps({"url": url, "token": token}))
    return path


def local_credentials(settings: Settings) -> Credentials:
    """What ``kernelrank up`` left on this host for its local user: under the home of these settings, else under
    the one ``up`` noted (``local_home_file``), so the client finds it from any folder."""
    if not settings.api_url_file.is_file():
        noted = local_home_file().read_text().strip() if local_home_file().is_file() else ""
        settings = dataclasses.replace(settings, home=Path(noted)) if noted else settings
    url = settings.api_url_file.read_text().strip() if settings.api_url_file.is_file() else ""
    return Credentials(url, read_private(settings.local_token_file))


def resolve(settings: Settings) -> Credentials:
    login, local = stored_login(), local_credentials(settings)
    url = normal(settings.api_url or login.url or local.url)
    token = settings.token or next((c.token for c in (login, local) if c.token and url and normal(c.url) == url), "")
    return Credentials(url, token)


def normal(url: str) -> str:
    return url.strip().rstrip("/")
