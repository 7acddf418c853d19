"""Starlette's TrustedHostMiddleware with the API's error shape: a refused Host header is 400 `{"detail"}`,
like every other refusal, not plain text."""

from __future__ import annotations

import json

from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REFUSED = json.dumps({"detail": "invalid Host header"}).encode()
PASSED = "foresight.host_ok"


class JSONTrustedHost(TrustedHostMiddleware):
    """Starlette's host check; only the response of a refusal (the app was never reached) is rewritten."""

    def __init__(self, app: ASGIApp, **kw) -> None:
        async def reached(scope: Scope, receive: Receive, send: Send) -> None:
            scope[PASSED] = True
            await app(scope, receive, send)

        super().__init__(reached, **kw)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return

        async def answer(message: Message) -> None:
            if scope.get(PASSED) or message["type"] not in ("http.response.start", "http.response.body"):
                await send(message)
            elif message["type"] == "http.response.start" and message["status"] == 400:
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(REFUSED)).encode())]})
                await send({"type": "http.response.body", "body": REFUSED})
            elif message["type"] == "http.response.start":
                await send(message)  # the redirect to www., left as Starlette sends it
                scope[PASSED] = True

        await super().__call__(scope, receive, answer)
