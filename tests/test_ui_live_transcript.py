"""The live transcript shows that someone speaks before Whisper, which runs once an utterance ends, has its words."""

from __future__ import annotations

from ui.data import LiveState


def test_live_transcript_shows_speech_before_whisper_has_its_words():
    live = LiveState()
    tick = {"events": [], "transcript": [], "tags": {}, "alerts": []}
    live.update([(1, {**tick, "time": 13.0, "speaking_since": 12.2}), (2, {**tick, "time": 14.0, "speaking_since": 12.2})])
    assert live.pending_lines() == ["[00:12] … (speaking)"]
    live.update([(3, {**tick, "time": 16.0})])
    assert live.pending_lines() == ["[00:12] … (transcribing)"]  # it ended; Whisper has it now
    live.update([(4, {**tick, "time": 17.0, "speaking_since": 16.5})])
    assert live.pending_lines() == ["[00:12] … (transcribing)", "[00:16] … (speaking)"]
    live.update([(5, {**tick, "time": 19.0, "transcript": [{"start": 12.0, "end": 15.2, "text": "hello there"}]})])
    assert live.pending_lines() == ["[00:16] … (transcribing)"]  # the first one's words came
    live.update([(6, {**tick, "time": 19.0 + 31})])
    assert live.pending_lines() == []  # Whisper heard no words in it: its placeholder goes after 30 s
