"""Watches as written: a threshold of their own, and sound watches that need audio evidence."""

import pytest

from app.services.stream_watches import check_watches
from models.errors import BadInput
from models.watches import heard, is_sound_watch, parse_watch


def test_a_watch_may_carry_its_own_threshold():
    spec = parse_watch("  an alarm clock is ringing @0.8 ")
    assert (spec.text, spec.query, spec.threshold) == ("an alarm clock is ringing @0.8", "an alarm clock is ringing", 0.8)
    assert parse_watch("someone falls down").threshold is None
    assert parse_watch("a car @ .5").threshold == 0.5
    assert parse_watch("mail to bob@example.com").threshold is None  # an @ inside the words is words
    for bad in ("a dog barks @1.5", "a dog barks @0", "   ", "@0.5"):
        with pytest.raises(BadInput):
            parse_watch(bad)
    with pytest.raises(BadInput, match="threshold"):
        check_watches(["a dog barks @2"])  # the API and the dashboard refuse it before the stream starts
    assert check_watches(["a dog barks @0.6", "a dog barks @0.6"]) == ["a dog barks @0.6"]


def test_sound_watches_are_told_from_speech_watches():
    assert is_sound_watch("a telephone is ringing") and is_sound_watch("an alarm clock is ringing")
    assert is_sound_watch("a dog barks") and is_sound_watch("glass shatters")
    assert not is_sound_watch("someone says the phone is ringing")
    assert not is_sound_watch('someone shouts "fire"')
    assert not is_sound_watch("someone falls down") and not is_sound_watch("a person waits at the door")


def test_a_sound_moment_needs_audio_weight():
    assert heard({"modality_weights": {"visual": 0.2, "audio": 0.5, "speech": 0.3}})
    assert not heard({"modality_weights": {"visual": 0.1, "audio": 0.3, "speech": 0.6}})  # the words that name it
    assert not heard({"modality_weights": {"visual": 0.75, "audio": 0.25, "speech": 0.0}})  # a picture of a phone
