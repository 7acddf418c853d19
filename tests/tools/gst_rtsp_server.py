"""A loopback RTSP server that also speaks RTP-over-TCP (interleaved), for the `rtsp_transport=tcp` tests.

Run with Debian's system Python (it needs python3-gi and gir1.2-gst-rtsp-server-1.0, which scripts/bootstrap.sh
installs): `/usr/bin/python3 tests/tools/gst_rtsp_server.py PORT CLIP.mp4`. It loops the clip's H.264 and AAC
without re-encoding and serves them at rtsp://127.0.0.1:PORT/live until killed.
"""

import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main() -> None:
    port, clip = sys.argv[1], sys.argv[2]
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        f'( filesrc location="{clip}" ! qtdemux name=d '
        "d.video_0 ! queue ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=1 "
        "d.audio_0 ! queue ! aacparse ! rtpmp4gpay name=pay1 pt=97 )")
    factory.set_shared(True)
    server.get_mount_points().add_factory("/live", factory)
    server.attach(None)
    print(f"serving rtsp://127.0.0.1:{port}/live", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
