"""A command's arguments from what a request gave (a query string, a JSON body, a form), checked against its registry
entry: the one place the API and the web pages turn a request into arguments."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from adapters.api.answers import error
from core.contracts.commands import attachment_from
from core.contracts.errors import UserError
from core.contracts.messages import Attachment
from core.contracts.registry import ArgKind, Spec
from core.contracts.specs import arg_value


def command_arguments(
    spec: Spec, given: dict[str, Any] | Response
) -> tuple[dict[str, Any], Attachment | None] | Response:
    """The command's arguments from what a request gave, by name, alias or short name, and its file; an argument
    the entry does not declare, or a value of the wrong shape, is refused with one sentence (400). A request
    already refused (``given`` a response) stays so."""
    if isinstance(given, Response):
        return given
    args: dict[str, Any] = {}
    attachment = None
    for name, value in given.items():
        arg = spec.arg(name)
        if value is None and arg is not None:  # JSON's null: not given
            continue
        if arg is None:
            return error(
                "invalid",
                f"`{name[:40]}` is not an argument of {spec.name}; it takes "
                f"{', '.join(a.name for a in spec.args) or 'none'}.",
            )
        if arg.kind is ArgKind.FILE:  # a file travels as the command's attachment
            try:
                attachment = value if isinstance(value, Attachment) else attachment_from(value)
            except UserError as exc:
                return error("invalid", str(exc))
            continue
        try:
            value = arg_value(arg, value)
        except UserError as exc:
            return error("invalid", str(exc))
        args[arg.name] = value
    return args, attachment
