"""Sound: AudioSet tags, log-mel statistics and the audio feature vector of each second.

The vector's speech-activity part is the speech stage's VAD window probabilities (the graph hands the speech
node's output to this one), so Silero runs once per second, not twice.
"""

from __future__ import annotations

from pipelines.media.segment import Segment
from pipelines.stages.config import StageConfig

TAGS_HANDED_ON = {"k": 8, "min_prob": 0.05}  # the tags each second hands the parser, which keeps its own top


class AudioStage:
    """What one second sounds like: AudioSet tags, log-mel statistics, speech activity, and its feature vector."""

    def __init__(self, config: StageConfig):
        from models.encoders.audio_features import AudioFeatureConfig, AudioFeatures

        self.config = config
        self.features = AudioFeatures(AudioFeatureConfig(tags=config.tags, vad=False, tag_top_k=TAGS_HANDED_ON["k"],
                                                          tag_min_prob=TAGS_HANDED_ON["min_prob"],
                                                          yamnet=config.yamnet))

    def reset(self) -> None:
        self.features.reset()

    def timings(self) -> dict[str, float]:
        """Seconds spent so far in the tagger and the log-mel features."""
        return {k: v for k, v in self.features.timings.items() if k != "vad_s"}

    def process(self, seg: Segment, speech: dict) -> dict:
        """One second, with the speech stage's output for the same second (its VAD window probabilities)."""
        result = (self.features.analyze(seg.audio, seg.start, speech_probs=speech["window_probs"])
                  if seg.audio is not None else None)
        readable = self.features.readable(result) or {}
        return {"index": seg.index, "tags": readable.get("audio_tags", {}), "level_db": readable.get("level_db"),
                "vector": self.features.vector(result), "available": result is not None}
