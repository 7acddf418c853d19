"""Foresight dashboard (run with `foresight dashboard`, or `streamlit run ui/dashboard.py`).

Pick a source in the sidebar: an uploaded file or a file path is analysed at once; an RTSP URL or a webcam
starts a live pipeline owned by the dashboard's process (every tab lists it and can stop it), whose view
refreshes every second. Below: stream health, the timeline of audio / visual / audio-visual events, the rolling transcript, alerts, and a query box whose moments play
the clip from their start.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.services.streams import StreamManager, TooManyStreams
from app.services.uploads import UploadRejected
from models.errors import BadInput
from pipelines.sinks.store import Store
from ui import backend
from ui.history import history_panel
from ui.live import layout_inputs, streams_panel
from ui.panels import show_panels
from ui.playback import playback_panel
from ui.recordings import recordings_panel
from ui.review import review_panel
from ui.search import search_panel

st.set_page_config(page_title="Foresight", layout="wide")


@st.cache_resource
def get_store(path: str) -> Store:
    return Store(path)


@st.cache_resource
def get_streams(path: str) -> StreamManager:
    """One registry of live sources for the whole process: every tab and every user sees the same streams."""
    return backend.stream_manager(get_store(path))


store = get_store(str(backend.db_path()))
manager = get_streams(str(backend.db_path()))
state = st.session_state
state.setdefault("result", None)
state.setdefault("job_id", None)
state.setdefault("error", None)
# the open result is in the URL (?job=...), so a reload or a shared link opens it again
if state.result is None and st.query_params.get("job"):
    state.update(result=store.result(st.query_params["job"]), job_id=st.query_params["job"])
    if state.result is None:
        state.update(job_id=None, error=f"no saved result for job {st.query_params['job']}")
        del st.query_params["job"]
# the page refreshes every second while a stream runs: a playing clip or the live picture must not dim each time
st.html("<style>.stElementContainer[data-stale='true']:has(video, img) {opacity: 1 !important; "
        "transition: none !important;}</style>")


def ask(live: bool) -> tuple[list[str], float]:
    """The sidebar's questions (a file) or watches (a live source), one per line, and the safety threshold."""
    if live:
        text = st.sidebar.text_area("Watch for (one per line)", key="watches", placeholder="someone falls down",
                                    help="standing queries, checked every few seconds as the stream plays; end a line in "
                                         "'@0.7' to give it a threshold of its own")
    else:
        text = st.sidebar.text_area("Questions (one per line)", key="questions", placeholder="when does the phone ring?",
                                    help="answered with the moments that match, when the analysis ends")
    threshold = st.sidebar.slider("Safety threshold", 0.05, 0.95, 0.7, 0.05, key="safety",
                                  help="probability a risk needs before the safety monitor warns: higher means fewer "
                                       "false alarms and fewer risks caught")
    return [line.strip() for line in text.splitlines() if line.strip()], threshold


def run_file_analysis(path: Path, uploaded: bool = False) -> None:
    """Analyse a file as a job; an upload that is refused is deleted again."""
    questions, threshold = state.asked
    bar = st.progress(0.0, text=f"analysing {path.name}")
    try:
        options = backend.analysis_options(questions, [], threshold, detector, pose, read_text)
        job_id, result = backend.analyze_file(store, path, options, lambda f: bar.progress(f, text=f"{f:.0%}"),
                                              questions=questions)
    except (BadInput, UploadRejected, FileNotFoundError) as exc:
        state.error = f"{'uploaded file' if uploaded else 'file on the server'} {exc}"
        bar.empty()
        if uploaded:
            backend.discard_upload(path)
        return
    bar.empty()
    state.update(result=result, job_id=job_id, error=None)


# -- sidebar: choose a source -------------------------------------------------------------------------------
st.sidebar.title("Foresight")
kind = st.sidebar.radio("Source", ["Upload a file", "File on the server", "RTSP / HTTP URL", "Webcam"], key="kind")
detector = st.sidebar.selectbox("Object detector", backend.DETECTORS, index=backend.DETECTORS.index(backend.DETECTOR),
                                key="detector", help="the CLI's --detector; docs/perception.md has their table")
pose = st.sidebar.selectbox("Pose model", backend.POSES, index=backend.POSES.index(backend.POSE), key="pose",
                            help="the CLI's --pose; docs/perception.md compares them")
read_text = st.sidebar.checkbox("Read text on screen", value=False, key="ocr",
                                help="the CLI's --ocr: PP-OCRv4 on changed frames, at most every 2 s; about a fifth "
                                     "more CPU (docs/performance.md)")
if kind == "Upload a file":
    uploaded = st.sidebar.file_uploader("Clip", type=None, key="upload")
    # Streamlit's own "N per file" rounds to whole units (512 MB reads "1GB"): hide it and say the limit exactly
    st.html("<style>[data-testid='stFileUploaderDropzoneInstructions'] {display: none;}</style>")
    st.sidebar.caption(f"video or audio, up to {st.get_option('server.maxUploadSize')} MB and "
                       f"{backend.MAX_DURATION_S / 60:.0f} min")
    state.asked = ask(live=False)
    if st.sidebar.button("Analyze", key="analyze_upload", disabled=uploaded is None, type="primary"):
        run_file_analysis(backend.save_upload(uploaded.name, uploaded.getvalue()), uploaded=True)
elif kind == "File on the server":
    path_text = st.sidebar.text_input("Path", key="path", placeholder="/data/clip.mp4")
    state.asked = ask(live=False)
    if st.sidebar.button("Analyze", key="analyze_path", disabled=not path_text, type="primary"):
        try:
            run_file_analysis(backend.server_file(path_text))
        except BadInput as exc:
            state.error = str(exc)
else:
    if kind == "Webcam":
        cams = backend.webcams()
        source = st.sidebar.selectbox("Device", cams, key="cam") if cams else None
        if not cams:
            st.sidebar.info("No /dev/video* device on this machine.")
        transport, detect_source = "tcp", None
    else:
        source = st.sidebar.text_input("URL", key="url", placeholder="rtsp://camera/stream")
        detect_source = st.sidebar.text_input("Detect stream (optional)", key="detect_url",
                                              placeholder="rtsp://camera/substream",
                                              help="the camera's low-resolution sub-stream: analysed, while the URL "
                                                   "above is recorded (the CLI's --detect-source)")
        transport = st.sidebar.radio("RTSP transport", ["tcp", "udp"], key="transport", horizontal=True)
    watches, threshold = ask(live=True)
    zones, lines, track = layout_inputs()
    if st.sidebar.button("Start", key="start_live", disabled=not source, type="primary"):
        try:
            options = backend.analysis_options([], watches, threshold, detector, pose, read_text)
            stream = backend.start_stream(manager, source, transport, options, zones, lines, track,
                                          detect_source=detect_source or None)
            state.update(viewing=stream.id, result=None, job_id=None, error=None)
        except (BadInput, TooManyStreams) as exc:
            state.error = str(exc)
        st.rerun()
    st.sidebar.caption(f"at most {manager.max_streams} live sources at once; they keep running when this tab "
                       "closes (stop them here)")

if state.error:
    st.error(state.error)

streams_panel(manager, store)
review_panel(store, manager)
if state.job_id and state.result is not None:
    st.query_params["job"] = state.job_id
elif "job" in st.query_params:
    del st.query_params["job"]
if state.result is not None:
    result = state.result
    job = store.job(state.job_id) if state.job_id else None
    st.caption(f"{result['source']}: {result['duration_s']:.1f} s, {len(result['events'])} events, "
               f"{len(result['transcript'])} transcript lines (job {state.job_id}"
               f"{', ' + job['status'] if job else ''})")
    for warning in (result.get("ingest") or {}).get("warnings", []):  # analysed in part: cut short, the limit, ...
        st.warning(warning)
    live_result = job is not None and job["kind"] == backend.LIVE_JOB_KIND  # files have no stream health
    show_panels(result["events"], result["transcript"], result["alerts"], result["duration_s"],
                result.get("ingest") if live_result else None, None, backend.media_for(store, state.job_id),
                key=f"timeline_{state.job_id}", moments=result.get("moments"))
    if live_result and backend.has_recording(store, state.job_id):  # a finished stream still plays from its recording
        playback_panel(store, state.job_id, result["events"], result["alerts"],
                       [m for m in result.get("moments") or [] if m.get("standing")])
elif not manager.list():
    st.info("Choose a source in the sidebar.")

history_panel(store)

recordings_panel(store, live=manager.unfinished() > 0)
search_panel(store, state.job_id)
