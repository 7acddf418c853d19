"""HEAD wherever GET works (FastAPI routes declare GET only, so HEAD was 405 while `Allow` listed it): the GET
handler runs and its status and headers are sent without the body. A streaming GET (server-sent events) ends
right after its headers."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        done = False

        async def headers_only(message: Message) -> None:
            nonlocal done
            if done:
                return
            if message["type"] == "http.response.start":
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                done = True

        await self.app({**scope, "method": "GET"}, receive, headers_only)
