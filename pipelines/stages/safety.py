"""Proactive safety: each second's signals go into the monitor, whose alerts join the record."""

from __future__ import annotations

from pipelines.stages.config import StageConfig
from pipelines.stages.record import Second


class SafetyStage:
    """Proactive safety: turns each second's signals into the monitor's input and returns its alerts."""

    def __init__(self, config: StageConfig, retriever=None):
        from models.safety.monitor import SafetyConfig, SafetyMonitor

        self.config = config
        cfg = SafetyConfig(judge_url=config.judge_url, escalation=config.safety_escalation)
        if config.safety_threshold is not None:
            cfg.threshold = config.safety_threshold
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
            camera_trouble=vis.get("camera_trouble"))

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
