"""Where the terminal client finds the API and its personal token.

The API's URL, first found of: ``KERNELRANK_API_URL`` (environment, ``.env`` or ``kernelrank.toml``); the URL
``kernelrank login`` stored; the URL the API started by ``kernelrank up`` on this host wrote (``<home>/run/api.url``,
in this folder's home or the one that ``kernelrank up`` noted for this user).
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

from core.contracts.config import Settings
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


def local_home_file() -> Path:
    """Where ``kernelrank up`` notes its home for this user, e.g. ~/.config/kernelrank/local-home: the client run in
    another folder finds the kernelrank running on this host through it (``KERNELRANK_HOME`` is relative, ``var``)."""
    return platformdirs.user_config_path("kernelrank") / "local-home"


def remember_local_home(home: Path) -> None:
    write_private(local_home_file(), str(home.resolve()))


def local_credentials(settings: Settings) -> Credentials:
    """What ``kernelrank up`` left on this host for its local user: in this folder's home, else in the home the
    last ``kernelrank up`` of this user noted."""
    for home in (settings.home, Path(read_private(local_home_file()).strip() or settings.home)):
        here = dataclasses.replace(settings, home=home)
        if here.api_url_file.is_file():
            return Credentials(here.api_url_file.read_text().strip(), read_private(here.local_token_file))
    return Credentials("", "")


def resolve(settings: Settings) -> Credentials:
    login, local = stored_login(), local_credentials(settings)
    url = normal(settings.api_url or login.url or local.url)
    token = settings.token or next((c.token for c in (login, local) if c.token and url and normal(c.url) == url), "")
    return Credentials(url, token)


def normal(url: str) -> str:
    return url.strip().rstrip("/")
