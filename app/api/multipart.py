"""Multipart uploads streamed straight to disk, with the limits checked while bytes arrive.

FastAPI's `UploadFile` reads the whole body before the handler runs, so a size cap there only bites after
the disk has filled; parsing the stream ourselves lets a too-large upload fail at the first byte over.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

from app.services.uploads import Upload, UploadRejected, private_dir, safe_filename

log = logging.getLogger("foresight.api")
FIELD_LIMIT = 64 * 1024  # bytes of all non-file fields together (queries)
FORM_SLACK = FIELD_LIMIT + 16 * 1024  # multipart framing allowed on top of the file itself


class _FormReader:
    """Callbacks for python-multipart's push parser: one file part goes to disk, small fields to memory."""

    def __init__(self, dest_dir: Path, file_field: str, max_bytes: int):
        self.dest_dir = dest_dir
        self.file_field = file_field
        self.max_bytes = max_bytes
        self.fields: dict[str, list[str]] = {}
        self.upload: Upload | None = None
        self.error: UploadRejected | None = None
        self._headers: dict[str, str] = {}
        self._hname = b""
        self._hvalue = b""
        self._name: str | None = None
        self._buf = bytearray()
        self._fh = None
        self._field_bytes = 0
        self.ended = False  # the closing boundary came: a body cut short is not taken for a short clip

    def callbacks(self) -> dict:
        return {"on_part_begin": self._part_begin, "on_header_field": self._header_field,
                "on_header_value": self._header_value, "on_header_end": self._header_end,
                "on_headers_finished": self._headers_done, "on_part_data": self._data, "on_part_end": self._part_end,
                "on_end": self._end}

    def _end(self) -> None:
        self.ended = True

    def _part_begin(self) -> None:
        self._headers, self._name, self._buf = {}, None, bytearray()

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._hname += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._hvalue += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._hname.decode("latin-1").lower()] = self._hvalue.decode("latin-1")
        self._hname, self._hvalue = b"", b""

    def _headers_done(self) -> None:
        _, params = parse_options_header(self._headers.get("content-disposition", ""))
        self._name = params.get(b"name", b"").decode("utf-8", "replace")
        if self._name == self.file_field and b"filename" in params:
            if self.upload is not None:
                raise UploadRejected(400, f"only one '{self.file_field}' part is accepted")
            filename = safe_filename(params[b"filename"].decode("utf-8", "replace"))
            ctype = parse_options_header(self._headers.get("content-type", "application/octet-stream"))[0]
            private_dir(self.dest_dir)
            path = self.dest_dir / filename
            self.upload = Upload(path, filename, ctype.decode("latin-1").lower(), 0)
            self._fh = os.fdopen(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600), "wb")
        elif b"filename" in params:  # a file in another part would be read into memory as a text field
            raise UploadRejected(422, f"send the clip as the multipart part '{self.file_field}' (a file came in "
                                      "another part)")

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._fh is not None:
            self.upload.size += end - start
            if self.upload.size > self.max_bytes:
                raise UploadRejected(413, f"upload is larger than the limit of {self.max_bytes} bytes")
            self._fh.write(data[start:end])
        else:
            self._field_bytes += end - start
            if self._field_bytes > FIELD_LIMIT:
                raise UploadRejected(413, f"form fields are larger than {FIELD_LIMIT} bytes")
            self._buf += data[start:end]

    def _part_end(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        elif self._name:
            try:
                self.fields.setdefault(self._name, []).append(self._buf.decode("utf-8"))
            except UnicodeDecodeError:
                raise UploadRejected(422, "form fields must be UTF-8 text") from None

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


async def receive_upload(request: Request, dest_dir: Path, max_bytes: int, allowed_types: tuple[str, ...],
                         file_field: str = "file", timeout_s: float = 30.0) -> Upload:
    """Stream a multipart body to `dest_dir`; raises UploadRejected (4xx + reason) for every bad upload: 408
    when no bytes arrive for `timeout_s`, 400 when the client goes away mid-body (logged at INFO, no
    traceback)."""
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    if ctype != b"multipart/form-data" or not params.get(b"boundary"):
        raise UploadRejected(415, "send the clip as multipart/form-data with a 'file' part")
    length = request.headers.get("content-length")
    if length is not None and length.isascii() and length.isdigit() and int(length) > max_bytes + FORM_SLACK:
        raise UploadRejected(413, f"upload is larger than the limit of {max_bytes} bytes")
    reader = _FormReader(dest_dir, file_field, max_bytes)
    chunks = request.stream().__aiter__()
    received = 0
    try:
        parser = MultipartParser(params[b"boundary"], reader.callbacks())
        while True:
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), timeout_s)
            except StopAsyncIteration:
                break
            received += len(chunk)  # the whole body, framing and anything after the closing boundary included
            if received > max_bytes + FORM_SLACK:
                raise UploadRejected(413, f"upload is larger than the limit of {max_bytes} bytes")
            parser.write(chunk)
        parser.finalize()
        if not reader.ended:
            raise UploadRejected(400, "the multipart body ended before its closing boundary (an upload cut short)")
    except TimeoutError:
        raise UploadRejected(408, f"upload stalled: no data for {timeout_s:g} s") from None
    except ClientDisconnect:
        log.info("client disconnected during an upload")
        raise UploadRejected(400, "client disconnected during the upload") from None
    except FormParserError as exc:  # a malformed part, or a boundary over 256 bytes
        raise UploadRejected(400, f"malformed multipart body ({' '.join(str(exc).split())[:120]})") from None
    finally:
        reader.close()
    upload = reader.upload
    if upload is None:
        raise UploadRejected(422, f"missing the multipart file part '{file_field}'")
    upload.fields = reader.fields
    if upload.content_type not in allowed_types:
        raise UploadRejected(415, f"content type {upload.content_type} is not allowed "
                                  f"(allowed: {', '.join(allowed_types)})")
    if upload.size == 0:
        raise UploadRejected(400, "uploaded file is empty")
    return upload
