"""The dashboard's playback buttons: one per moment, newest first, so no two buttons share a key (Streamlit
refuses a duplicate key and the whole live view fails: an audio and an audio-visual Speech event that start in
the same second did that in CI)."""

from ui.playback import MAX_EVENTS, moment_key, playable


def test_an_audio_and_an_audio_visual_event_of_one_second_are_one_button():
    events = [
        {"label": "Speech", "name": "Speech", "taxonomy": "audio", "start": 32.0, "end": 39.0},
        {"label": "Speech", "name": "Speech", "taxonomy": "audio-visual", "start": 32.0, "end": 36.0},
        {"label": "Motorbike", "name": "Motorbike", "taxonomy": "visual", "start": 39.0, "end": 40.0},
    ]
    alerts = [{"time": 32.0, "rule": "fall", "severity": "warning"}]
    moments = [{"start": 11.5, "query": "the phone rings"}]
    items = playable(events, alerts, moments)
    keys = [moment_key(i) for i in items]
    assert len(keys) == len(set(keys))
    assert items == [("event", 39.0, "Motorbike"), ("alert", 32.0, "fall"), ("event", 32.0, "Speech"),
                     ("watch", 11.5, "the phone rings")]


def test_the_latest_distinct_events_fill_the_row_after_duplicates_are_merged():
    events = [{"label": "Speech", "start": float(t), "end": t + 1.0, "taxonomy": tax}
              for t in range(10) for tax in ("audio", "audio-visual")]
    items = playable(events, [], [])
    assert [t for _, t, _ in items] == [float(t) for t in range(9, 9 - MAX_EVENTS, -1)]
