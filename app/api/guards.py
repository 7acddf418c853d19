"""What stands between the network and the routers: body limits, one-line validation errors, the `Allow`
header, and bounded metric labels. Every refusal here is a 4xx with `{"detail": "<one-line reason>"}` that
never echoes what the caller sent."""

from __future__ import annotations

import asyncio
import json

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.routing import Match

from app.api.context import NO_KEY, key_matches

KNOWN_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
BODY_METHODS = ("POST", "PUT", "PATCH")


def problem(status: int, detail: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


async def _send_problem(send, status: int, detail: str, extra: list | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


class BodyLimits:
    """Everything a request body must pass before a byte of it is read, on every route: the API key (401), the
    content type (415: multipart only where a route takes uploads, `upload_paths`), and the size (413 from
    Content-Length). JSON bodies are then read here up to `max_bytes` (413 beyond) with `timeout_s` between chunks
    (408 for a stalled client) and handed on; an upload route streams its own body under its own limits (the
    upload's size and the same stall timeout, `app.api.multipart`)."""

    def __init__(self, app, max_bytes: int, timeout_s: float, api_key: str | None = None,
                 upload_paths: tuple[str, ...] = ()):
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s
        self.api_key, self.upload_paths = api_key, upload_paths

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        path = scope.get("path", "")
        if self.api_key is not None and (path == "/v1" or path.startswith("/v1/")) and scope["method"] != "OPTIONS":
            text = {k: headers[k].decode("latin-1") for k in (b"x-api-key", b"authorization") if k in headers}
            if not key_matches(self.api_key, text.get(b"x-api-key"), text.get(b"authorization")):
                return await _send_problem(send, 401, NO_KEY, [(b"www-authenticate", b"Bearer")])
        if scope["method"] not in BODY_METHODS:
            return await self.app(scope, receive, send)
        if headers.get(b"content-type", b"").lower().startswith(b"multipart/"):
            if path in self.upload_paths:
                return await self.app(scope, receive, send)
            return await _send_problem(send, 415, "this route takes application/json, not multipart")
        if path in self.upload_paths:  # refused before any of it is read, whatever its size
            return await _send_problem(send, 415, "send the clip as multipart/form-data with a 'file' part")
        length = headers.get(b"content-length", b"")
        too_large = f"request body is larger than {self.max_bytes} bytes"
        if length.isdigit() and int(length) > self.max_bytes:
            return await _send_problem(send, 413, too_large)
        body, more = bytearray(), True
        while more:
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                return await _send_problem(send, 408, "request body timed out")
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                return await _send_problem(send, 413, too_large)
            more = message.get("more_body", False)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def one_line(exc: RequestValidationError) -> str:
    """The first validation error as `where: what`, without the input."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    err = errors[0]
    where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
    what = " ".join(str(err.get("msg", "invalid value")).split())[:200]
    text = f"{where}: {what}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    return text.encode("utf-8", "replace").decode("utf-8")


def allowed_methods(app: FastAPI, scope) -> list[str]:
    """Every method some route serves at this path (a path's methods may live in separate routes)."""
    methods = {m for m in KNOWN_METHODS if m != "OPTIONS"
               and any(r.matches({**scope, "method": m})[0] is Match.FULL for r in app.router.routes)}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods | {"OPTIONS"}) if methods else []


def _openapi_with_one_line_422(app: FastAPI):
    """The OpenAPI document with every 422 described as what the handler sends: `{"detail": "<one line>"}`."""
    original = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = original()
        problem_ref = {"$ref": "#/components/schemas/Problem"}
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                response = operation.get("responses", {}).get("422")
                if response is not None:
                    response["description"] = "invalid request (one-line reason, never the input)"
                    response["content"] = {"application/json": {"schema": problem_ref}}
        components = schema.get("components", {}).get("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        app.openapi_schema = schema
        return schema

    return openapi


def install(app: FastAPI) -> None:
    app.openapi = _openapi_with_one_line_422(app)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        return problem(422, one_line(exc))

    @app.middleware("http")
    async def allow_header(request: Request, call_next):
        if request.method == "OPTIONS":
            methods = allowed_methods(app, request.scope)
            if methods:
                return Response(status_code=204, headers={"Allow": ", ".join(methods)})
        response = await call_next(request)
        if response.status_code == 405:
            methods = allowed_methods(app, request.scope)
            if methods:
                response.headers["Allow"] = ", ".join(methods)
        return response


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"
