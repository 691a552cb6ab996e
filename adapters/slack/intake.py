"""Files in from Slack (kernels, and problems for ``admin create``): metadata from ``files.info``, the bytes from
``url_private_download``.

Nothing is downloaded before the name and size check out, the download stops at the size limit, and the
bytes must be UTF-8 text (``core.contracts.commands.decode_source``, the rule every adapter shares). The bot token
goes only to Slack's own file host. When Slack answers a download with its login page (the app lacks
``files:read``), the person is told to have the app reinstalled instead of submitting HTML.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.config import SlackConfig
from core.contracts.commands import SOURCE_SUFFIXES, decode_source
from core.contracts.errors import UserError

log = logging.getLogger(__name__)
DOWNLOAD_TIMEOUT_S = 30.0
CHUNK = 64 * 1024
NO_ACCESS = (
    "Slack did not give kernelrank the file (the app may be missing the files:read scope); ask a "
    "workspace admin to reinstall the app, or submit from the terminal client meanwhile."
)


@dataclass(frozen=True)
class KernelFile:
    name: str
    content: bytes


def kernel_files(files: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The attached files that may be kernels, in the order they were attached: those named ``.py``/``.cu``,
    and those Slack sends without details (``"file_access": "check_file_info"``, as in Slack Connect
    channels), which ``FileIntake.fetch`` looks up before deciding."""
    return [
        f
        for f in files or []
        if f.get("id") and (str(f.get("name") or "").lower().endswith(SOURCE_SUFFIXES) or not f.get("name"))
    ]


def precheck(file: dict[str, Any], max_bytes: int, kernel: bool = True) -> None:
    """Refuse by what Slack already told us about a file, before fetching anything (``kernel``: a .py or .cu)."""
    name = str(file.get("name") or file.get("title") or "the file")
    mode = file.get("mode")
    if mode == "hidden_by_limit":
        raise UserError(f"Slack hides {name} (the workspace's file history limit); attach it again.")
    if mode == "tombstone":
        raise UserError(f"{name} was deleted from Slack; attach it again.")
    if file.get("is_external"):
        raise UserError(f"{name} is a link to another service; attach the file itself.")
    if kernel and not name.lower().endswith(SOURCE_SUFFIXES):
        raise UserError(f"{name!r} is not a kernel file: attach a .py or .cu file.")
    size = file.get("size")
    if isinstance(size, int) and size > max_bytes:
        raise UserError(
            f"{name} is {size // 1024} KiB; the limit is {max_bytes // 1024} KiB. "
            "Move data out of the source and submit again."
        )


class FileIntake:
    def __init__(self, client: AsyncWebClient, config: SlackConfig) -> None:
        self._client = client
        self._config = config
        self._session: aiohttp.ClientSession | None = None

    async def fetch(self, file_id: str) -> KernelFile:
        """The kernel file with this id, checked; ``UserError`` with what to do when it cannot be used."""
        file = await self.fetch_any(file_id, self._config.max_source_bytes, kernel=True)
        decode_source(file.name, file.content, self._config.max_source_bytes)
        return file

    async def fetch_any(self, file_id: str, max_bytes: int, kernel: bool = False) -> KernelFile:
        """Any attached file (a problem's archive, say) of at most ``max_bytes``."""
        info = await self._info(file_id)
        precheck(info, max_bytes, kernel)
        name = str(info.get("name"))
        url = str(info.get("url_private_download") or info.get("url_private") or "")
        if not url or not self._config.file_host_allowed(url):
            log.error("file %s has no download URL on Slack's file host (%r); not fetching it", file_id, url[:80])
            raise UserError(f"Slack gave no download link for {name}; attach it again.")
        return KernelFile(name=name, content=await self._download(url, name, max_bytes))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _info(self, file_id: str) -> dict[str, Any]:
        try:
            response = await self._client.files_info(file=file_id)
        except SlackApiError as exc:
            code = exc.response.get("error")
            log.warning("files.info %s failed: %s", file_id, code)
            if code in ("file_not_found", "file_deleted"):
                raise UserError("That file is no longer on Slack; attach it again.") from exc
            if code in ("missing_scope", "not_allowed_token_type", "no_permission"):
                raise UserError(NO_ACCESS) from exc
            raise UserError("Slack would not describe the attached file; try again in a minute.") from exc
        except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("files.info %s failed: %s", file_id, type(exc).__name__)
            raise UserError("Slack did not answer in time; try again in a minute.") from exc
        return dict(response.get("file") or {})

    async def _download(self, url: str, name: str, limit: int) -> bytes:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_S))
        try:
            async with self._session.get(
                url, headers={"Authorization": f"Bearer {self._config.bot_token}"}, allow_redirects=False
            ) as response:
                if response.status == 404:
                    raise UserError(f"{name} is no longer on Slack; attach it again.")
                kind = response.headers.get("Content-Type", "")
                if response.status != 200 or (kind.startswith("text/html") and not name.endswith(".html")):
                    log.error("download of %s answered %s (%s): is files:read granted?", name, response.status, kind)
                    raise UserError(NO_ACCESS)
                content = bytearray()
                async for chunk in response.content.iter_chunked(CHUNK):
                    content += chunk
                    if len(content) > limit:
                        raise UserError(
                            f"{name} is over the limit of {limit // 1024} KiB. Move data out of "
                            "the source and submit again."
                        )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("download of %s failed: %s", name, type(exc).__name__)
            raise UserError(f"Slack did not send {name} in time; try again in a minute.") from exc
        return bytes(content)
