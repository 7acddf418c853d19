"""The one credential-redaction function (`redact`): what every source URL, error message and log line goes
through before it is shown, stored or logged (API responses, the SSE hello, /metrics, job and result rows, logs).

It masks, in URLs and in free text alike:
- userinfo: everything between `scheme://` and the last `@` before the path (`user:pass@`, passwords with
  spaces, `@` or percent-encoding included) becomes `***@`;
- every parameter whose name looks like a credential, wherever it stands: a query (`?pass=`, `&tok=`), a
  `;`-separated query or matrix parameter (`/live;password=`), or a bare `name=value` in a sentence. A URL's
  fragment (`#access_token=...`: never sent to a server, so never needed) is masked whole. Names are compared case-insensitively after percent-decoding (`Pa%73s`);
- header-like forms: `Authorization: Bearer ...`, `X-API-Key: ...`, `Cookie: ...`;
- and any secret of the `known` URLs (their userinfo, password and credential values, raw and
  percent-decoded) wherever it appears on its own, e.g. in an FFmpeg message that quotes only the password.

Values are replaced in place (nothing else is re-encoded), so the rest of a URL stays as it was.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
# Substrings that make a parameter name a credential ("loginPass", "x_auth_token", "apikey", "sig"), and
# names that are one only on their own (a "p" or "k" parameter, but not "profile").
SECRET_PARTS = ("pass", "pw", "psw", "pwd", "tok", "key", "secret", "sig", "auth", "session", "sess", "code",
                "cred", "jwt", "bearer", "access", "private", "otp", "cookie", "nonce", "hash", "ticket", "login")
SECRET_NAMES = {"p", "pin", "sid", "hmac"}
NOT_SECRET = {"codec", "codecs", "keyframe", "keyframes", "keyint"}  # contain a part above, hold no credential
_NAME_PARTS = re.compile("|".join(SECRET_PARTS), re.IGNORECASE)

USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\r\n]{0,512}@)")
PARAM = re.compile(r"(?P<lead>^|[?&;#\s,:|(\[{\"'])(?P<name>[A-Za-z0-9_.%+\-]{1,64})=(?P<value>[^&;#?\s\"'<>]+)")
HEADER = re.compile(r"(?P<name>\b(?:authorization|proxy-authorization|x-api-key|api-key|cookie|set-cookie)"
                    r"\s*[:=]\s*)(?P<value>(?:bearer\s+|basic\s+|digest\s+)?[^\s,;\"']+)", re.IGNORECASE)
URL_FRAGMENT = re.compile(r"(?P<url>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>#]*)#[^\s'\"<>]+")
MIN_KNOWN = 3  # a known secret shorter than this is not searched for on its own (it would mask ordinary text)


def is_secret_name(name: str) -> bool:
    """Whether a parameter called `name` (percent-encoded or not, any case) holds a credential."""
    name = unquote(name).strip().lower()
    return name in SECRET_NAMES or (name not in NOT_SECRET and bool(_NAME_PARTS.search(name)))


def redact(text: str | None, *known: str) -> str | None:
    """`text` (a URL, an error message, a log line) with every credential masked; None and "" come back as
    they are. `known`: URLs whose secrets are masked wherever they appear in `text`, also out of URL form."""
    if not text:
        return text
    for secret in sorted({s for url in known for s in _secrets_of(url)}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = URL_FRAGMENT.sub(lambda m: f"{m['url']}#{MASK}", text)
    text = PARAM.sub(lambda m: f"{m['lead']}{m['name']}={MASK}" if is_secret_name(m["name"]) else m[0], text)
    return HEADER.sub(lambda m: f"{m['name']}{MASK}", text)


def _secrets_of(url: str | None) -> set[str]:
    """The userinfo and credential values of `url`, raw and percent-decoded, long enough to search for."""
    if not url or "://" not in url:
        return set()
    found = set()
    m = USERINFO.search(url)
    if m:
        userinfo = m["userinfo"][:-1]  # the user name alone is no secret; user:password and the password are
        found |= {userinfo, userinfo.partition(":")[2]}
    for m in PARAM.finditer(url):
        if is_secret_name(m["name"]):
            found.add(m["value"])
    found |= {unquote(s) for s in found}
    return {s for s in found if len(s) >= MIN_KNOWN and s != MASK}
