"""Proactive safety: each second's signals go into the monitor, whose alerts join the record."""

from __future__ import annotations

from pipelines.stages.config import StageConfig
from pipelines.stages.record import Second


def stream_retriever(cfg):
    """Rule retrieval for one stream: the rules, TF-IDF and MiniLM loaded once per process, and a sentence
    vector cache of this stream's own (the cache is state: a stream sees the vectors it would see alone)."""
    import copy

    from models.safety.monitor import SafetyMonitor
    from models.shared import shared

    key = ("safety-retriever", cfg.use_embeddings, cfg.rules_file, cfg.recency_decay, cfg.embed_weight)
    base = shared(key, lambda: SafetyMonitor(cfg).retriever)
    retriever = copy.copy(base)
    if base.embedder is not None:
        retriever.embedder = base.embedder.for_stream()
    return retriever


class SafetyStage:
    """Proactive safety: turns each second's signals into the monitor's input and returns its alerts."""

    def __init__(self, config: StageConfig, retriever=None):
        from models.safety.monitor import SafetyConfig, SafetyMonitor

        self.config = config
        cfg = SafetyConfig(judge_url=config.judge_url, escalation=config.safety_escalation)
        if config.safety_threshold is not None:
            cfg.threshold = config.safety_threshold
        if config.safety and retriever is None:
            retriever = stream_retriever(cfg)
        self.monitor = SafetyMonitor(cfg, retriever=retriever) if config.safety else None
        self.last_time = 0.0

    def reset(self) -> None:
        """A new source: a fresh monitor (its log and cooldowns belong to one source) on the loaded rules."""
        from models.safety.monitor import SafetyMonitor

        if self.monitor is not None:
            self.monitor = SafetyMonitor(self.monitor.config, retriever=self.monitor.retriever)
        self.last_time = 0.0

    def signals(self, record: Second):
        from models.safety.signals import SecondSignals

        words = " ".join(t["text"] for t in record.transcript)
        vis = record.visual or {}
        return SecondSignals(
            time=float(record.start), camera=self.config.camera, audio_tags=dict(record.tags),
            speech_text=words, events=list(record.events_active),
            persons=vis.get("persons"), objects=dict(vis.get("objects", {})), pose=list(vis.get("pose", [])),
            camera_trouble=vis.get("camera_trouble"), signs=[t["text"] for t in record.text],
            still=[{"track_id": t["id"], "still_s": t["still_s"], "lying": t["lying"]}
                   for t in record.tracked if "still_s" in t])

    def process(self, record: Second) -> Second:
        if self.monitor is None or record.index is None:
            return record
        self.last_time = max(self.last_time, float(record.end))
        alerts = self.monitor.update(self.signals(record))
        record.alerts = record.alerts + [a.to_dict() for a in alerts]
        return record

    def finish(self, record: Second) -> Second:
        if self.monitor is None:
            return record
        alerts = self.monitor.flush(self.last_time)
        record.alerts = record.alerts + [a.to_dict() for a in alerts]
        return record
