"""The loopback RTSP camera the live tests use: it returns only once its stream is published.

CI once saw 20 s of 404 from it: the server answers the feeding ffmpeg's RECORD with 404 when one of its RTP ports
is taken, and that ffmpeg then exits. The camera now notices and moves to a free port range.
"""

from __future__ import annotations

import socket
import subprocess

from training.media.loopback import RTP_PORTS, RtspServer


def probe(url: str) -> list[str]:
    out = subprocess.run(["ffprobe", "-v", "error", "-rtsp_transport", "udp", "-show_entries", "stream=codec_type",
                          "-of", "csv=p=0", url], capture_output=True, text=True, timeout=30)
    return out.stdout.split()


def test_the_camera_publishes_when_its_first_rtp_ports_are_taken(demo_clip):
    camera = RtspServer(demo_clip[0])
    taken = camera.rtp_start_port
    blockers = []
    try:
        for port in range(taken, taken + RTP_PORTS):
            blockers.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
            blockers[-1].bind(("127.0.0.1", port))
        camera.start()
        assert camera.rtp_start_port != taken
        assert probe(camera.url) == ["video", "audio"]
        camera.kill()
        camera.start()  # back on the same address, as the outage tests need
        assert probe(camera.url) == ["video", "audio"]
    finally:
        camera.kill()
        for sock in blockers:
            sock.close()
