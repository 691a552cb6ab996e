"""``GET /v1/openapi.json``: the API described in OpenAPI 3.1, generated from the command registry.

Every route of every registry command is there with its summary (the entry's ``about``), its path parameters,
its other arguments (query parameters for GET and DELETE, a JSON body for POST; a submission as
multipart/form-data or JSON), who may call it (``bearer``, optional for public commands) and its answers: the
core's ``Reply`` or an ``Error``. ``GET /v1/docs`` shows it as a page for people, rendered here (no script).
"""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from adapters.api.answers import STATUS
from core.contracts.registry import COMMANDS, Access, Arg, ArgKind, Route, Spec
from core.contracts.version import __version__

_JSON_TYPES: dict[ArgKind, dict[str, Any]] = {
    ArgKind.NUMBER: {"type": "integer"},
    ArgKind.GPUS: {"type": ["string", "array"], "items": {"type": "string"}},
}
_FILE_JSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "base64": {"type": "string", "contentEncoding": "base64"}},
    "required": ["name", "base64"],
}
_REPLY = {
    "type": "object",
    "description": "The core's answer: a title, parts for people (text, tables, code...) and `data` for programs.",
    "properties": {
        "title": {"type": "string"},
        "parts": {"type": "array", "items": {"type": "object"}},
        "tone": {"type": "string", "enum": ["info", "success", "warning", "error"]},
        "data": {"type": "object"},
        "final": {"type": "boolean"},
        "in_reply_to": {"type": "string"},
    },
}
_ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string", "enum": sorted(STATUS)}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}


def describe() -> dict[str, Any]:
    """The OpenAPI document of the registry's routes and ``/v1/health``."""
    paths: dict[str, dict[str, Any]] = {
        "/v1/health": {
            "get": {
                "operationId": "health",
                "summary": "whether the API runs, whether the core answers, and kernelrank's version",
                "security": [],
                "responses": {"200": _json({"type": "object"}, "up"), "503": _json({"type": "object"}, "core down")},
            }
        }
    }
    for spec in COMMANDS:
        for index, route in enumerate(spec.routes):
            operation_id = spec.name.replace(" ", "_").replace("-", "_") + (f"_{index}" if index else "")
            paths.setdefault(route.path, {})[route.method.lower()] = _operation(spec, route, operation_id)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "kernelrank",
            "version": __version__,
            "description": "GPU-kernel competitions: every command of kernelrank as an HTTP route.",
        },
        "paths": paths,
        "components": {
            "schemas": {"Reply": _REPLY, "Error": _ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "a personal token"}},
        },
    }


def _operation(spec: Spec, route: Route, operation_id: str) -> dict[str, Any]:
    in_path = set(route.path_params)
    given = [arg for arg in spec.args if arg.name not in in_path and arg.name not in route.fixed]
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": _schema(spec.arg(name))} for name in route.path_params
    ]
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": spec.about,
        "tags": [spec.words[0]],
        "security": [{"bearer": []}, {}] if spec.access is Access.PUBLIC else [{"bearer": []}],
        "responses": {
            "200" if not spec.submission else "202": _json({"$ref": "#/components/schemas/Reply"}, "the core's reply"),
            "default": _json({"$ref": "#/components/schemas/Error"}, "a refusal: one sentence under a code"),
        },
    }
    if spec.submission:
        operation["requestBody"] = _submission_body(given)
        operation["responses"]["200"] = {
            "description": "with `Accept: text/event-stream`: the acceptance, progress and reports as events",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    elif route.method == "POST":
        if given:
            operation["requestBody"] = {"required": False, "content": {"application/json": {"schema": _object(given)}}}
    else:
        parameters += [
            {"name": arg.name, "in": "query", "required": arg.required, "schema": _schema(arg), "description": arg.help}
            for arg in given
        ]
    if parameters:
        operation["parameters"] = parameters
    return operation


def _submission_body(args: list[Arg]) -> dict[str, Any]:
    form = _object(args)
    form["properties"] = {
        name: ({"type": "string", "format": "binary"} if prop is _FILE_JSON else prop)
        for name, prop in form["properties"].items()
    }
    kernel = next(arg.name for arg in args if arg.kind is ArgKind.FILE)
    json_body = _object([arg for arg in args if arg.kind is not ArgKind.FILE])
    json_body["properties"].update(file_name={"type": "string"}, source={"type": "string"})
    json_body["required"] = ["file_name", "source"]
    form["required"] = [kernel]
    return {
        "required": True,
        "content": {"multipart/form-data": {"schema": form}, "application/json": {"schema": json_body}},
    }


def _object(args: list[Arg]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {arg.name: _schema(arg) for arg in args}}
    if required := [arg.name for arg in args if arg.required]:
        schema["required"] = required
    return schema


def _schema(arg: Arg | None) -> dict[str, Any]:
    if arg is None:
        return {"type": "string"}
    if arg.kind is ArgKind.FILE:
        return _FILE_JSON
    schema = dict(_JSON_TYPES.get(arg.kind, {"type": "string"}))
    if arg.choices:
        schema["enum"] = list(arg.choices)
    if arg.help:
        schema["description"] = arg.help
    return schema


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


async def openapi_json(request: Request) -> JSONResponse:
    return JSONResponse(describe())


async def openapi_page(request: Request) -> HTMLResponse:
    """The routes for people: method, path, what it does, its arguments."""
    rows = []
    for path, operations in describe()["paths"].items():
        for method, operation in operations.items():
            names = [p["name"] for p in operation.get("parameters", [])]
            body = operation.get("requestBody", {}).get("content", {})
            names += [n for media in body.values() for n in media["schema"].get("properties", {})]
            cells = [f"<code>{method.upper()}</code>", f"<code>{html.escape(path)}</code>"]
            cells += [html.escape(operation["summary"]), html.escape(", ".join(dict.fromkeys(names)))]
            rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    page = (
        "<!doctype html><meta charset=utf-8><title>kernelrank API</title>"
        f"<h1>kernelrank API {__version__}</h1><p>Send a personal token as <code>Authorization: Bearer</code>. "
        'The machine-readable description: <a href="/v1/openapi.json">/v1/openapi.json</a>.</p>'
        "<table><tr><th>method</th><th>path</th><th>what</th><th>arguments</th></tr>" + "".join(rows) + "</table>"
    )
    return HTMLResponse(page)
