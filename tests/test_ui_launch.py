"""`foresight dashboard`'s Streamlit command: every message is sent whole, so the live view's once-a-second
reruns cannot outrun the browser's message cache ("Connection error ... Cached ForwardMsg MISS", which stopped
the page in CI's review-feed test)."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from streamlit import config
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.forward_msg_cache import populate_hash_if_needed

from ui.launch import NO_MESSAGE_CACHE, ROOT, streamlit_command


def big_element() -> ForwardMsg:
    msg = ForwardMsg()
    msg.delta.new_element.markdown.body = "x" * 200_000  # a table or chart of this size is cached by default
    return msg


def test_the_dashboard_command_sends_every_message_whole():
    command = streamlit_command(argparse.Namespace(host="127.0.0.1", port=8501, max_upload_mb=512))
    value = command[command.index("--global.minCachedMessageSize") + 1]
    assert value == NO_MESSAGE_CACHE
    file = tomllib.loads(Path(ROOT, ".streamlit", "config.toml").read_text())
    assert float(file["global"]["minCachedMessageSize"]) == float(NO_MESSAGE_CACHE)  # `streamlit run` alike
    default = config.get_option("global.minCachedMessageSize")  # this folder's .streamlit/config.toml's, if read
    try:
        config.set_option("global.minCachedMessageSize", 10e3)  # Streamlit's own default
        msg = big_element()
        populate_hash_if_needed(msg)
        assert msg.metadata.cacheable  # Streamlit's default would send it once, then by its hash
        config.set_option("global.minCachedMessageSize", float(value))
        msg = big_element()
        populate_hash_if_needed(msg)
        assert not msg.metadata.cacheable
    finally:
        config.set_option("global.minCachedMessageSize", default)
