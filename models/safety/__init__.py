"""Proactive safety monitor: warns before harm, from live signals or PaSBench-style observation logs.

Layers, top to bottom: `signals` (what the live pipeline knows about one second), `obslog` (a rolling
observation log in PaSBench's format), `fast_rules` (deterministic live rules), `retrieval` (which of
the 288 known rules a log violates), `judge` (optional LLM check), `monitor` (the one interface that
raises `Alert`s), and the offline `evaluate`/`replay`/`cli` harness.
"""

from models.safety.alerts import Alert
from models.safety.monitor import SafetyConfig, SafetyMonitor
from models.safety.signals import SecondSignals

__all__ = ["Alert", "SafetyConfig", "SafetyMonitor", "SecondSignals"]
