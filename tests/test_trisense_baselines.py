"""Text-matching baseline over transcripts and detector labels."""

import numpy as np

from models.trisense.baselines import TextMatchBaseline, equal_weights_config
from models.trisense.features import ClipFeatures
from models.trisense.modeling_trisense import TriSenseConfig


def clip():
    return ClipFeatures(
        visual=np.zeros((40, 4), np.float32),
        transcript=[{"start": 2.0, "end": 5.0, "text": "the weather is nice today"},
                    {"start": 18.0, "end": 21.0, "text": "what is the code to unlock this computer"}],
        events=[{"label": "Bark", "modality": "audio", "start": 30.0, "end": 33.0},
                {"label": "car", "modality": "visual", "start": 10.0, "end": 14.0}],
    )


def test_text_match_finds_transcript_and_label_spans():
    base = TextMatchBaseline()
    top = base.ground("someone asks for a password", clip(), top_k=1)[0]
    assert (top.start, top.end) == (18.0, 21.0)
    assert top.modality_weights == {"visual": 0.0, "audio": 0.0, "speech": 1.0}
    top = base.ground("a dog barks", clip(), top_k=1)[0]
    assert (top.start, top.end) == (30.0, 33.0) and top.modality_weights["audio"] == 1.0
    ranked = base.ground("a car passes", clip(), top_k=4)
    assert len(ranked) == 4 and [m.score for m in ranked] == sorted((m.score for m in ranked), reverse=True)


def test_text_match_without_text_gives_no_prediction():
    assert TextMatchBaseline().ground("a dog barks", clip().restricted(["visual"]).__class__(
        visual=np.zeros((5, 4), np.float32))) == []


def test_equal_weights_config_only_disables_connector():
    cfg = TriSenseConfig(visual_dim=7)
    eq = equal_weights_config(cfg)
    assert eq.fixed_modality_weights and not cfg.fixed_modality_weights and eq.visual_dim == 7
