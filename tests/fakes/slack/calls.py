"""One recorded call to the fake Slack."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    auth: str = ""  # "bot", "app", "none" or "wrong": which token came with the call
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params, "auth": self.auth, "at": self.at}
