"""The CMDP of Foresight's live pipeline under a latency budget, built from its real knobs and measured costs.

Knobs (pipelines/): the perception sample rate `--fps` (`AnalyzeOptions.sample_fps`, frames reaching the
visual stage per second) and the model tier: "full" runs every stage, "speech+tags" turns the visual stage off
(`StageConfig.visual=False`: VAD, Whisper and AudioSet tags only). Per-second CPU costs come from the
throughput table in docs/perception.md (ms per video second, one thread): YOLOv3-tiny and faces run on one
frame of each second that has frames, pose and motion checks on every sampled frame, tags + VAD + log-mel on
every second, Whisper on speech seconds, and decoding is paid whatever the knobs.

State (observable live): the backlog (seconds of work queued, from the measured latency, on a few levels),
whether the scene is busy (speech or people in the last second) and whether the machine is contended (load
average above its cores). Each second: latency = backlog + service time (cost = latency / cap, in [0, 1]),
backlog' = max(0, backlog + service - 1 s); service time = CPU ms / the cores this stream gets, with
log-normal noise. Reward: a perception-quality proxy, audio always plus visual coverage 1 - exp(-fps), which
matters more when the scene is busy. An episode is a window of `horizon` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from models.cmdp.tabular import CMDP


@dataclass(frozen=True)
class Action:
    tier: str  # "full" or "speech+tags"
    fps: float  # frames per second given to the visual stage (0 when it is off)


ACTIONS = (Action("full", 2.0), Action("full", 1.0), Action("full", 0.5), Action("speech+tags", 0.0))


@dataclass(frozen=True)
class StageCosts:
    """CPU ms per video second on one thread (docs/perception.md, 720p30 source)."""

    decode: float = 249.2
    yolo: float = 177.2  # middle frame of a second that has frames
    faces: float = 6.0
    pose_per_frame: float = 56.6
    motion_per_frame: float = 1.3
    audio: float = 25.9  # YAMNet tags + Silero VAD + log-mel
    asr_per_speech_second: float = 99.2


@dataclass(frozen=True)
class PipelineModelConfig:
    horizon: int = 10
    latency_cap_s: float = 4.0
    backlog_levels: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0)
    cores: tuple[float, float] = (2.0, 0.6)  # CPU available to this stream: idle machine, contended machine
    stay_scene: float = 0.9
    stay_load: float = 0.9
    noise_sigma: float = 0.25
    noise_points: int = 16
    audio_weight: float = 0.4
    visual_weight: tuple[float, float] = (0.3, 1.0)  # quiet scene, busy scene
    costs: StageCosts = StageCosts()

    @property
    def n_states(self) -> int:
        return len(self.backlog_levels) * 4


def state_index(config: PipelineModelConfig, level: int, busy: bool, contended: bool) -> int:
    return (level * 2 + int(busy)) * 2 + int(contended)


def state_parts(config: PipelineModelConfig, s: int) -> tuple[int, bool, bool]:
    return s // 4, bool((s // 2) % 2), bool(s % 2)


def backlog_level(config: PipelineModelConfig, backlog_s: float) -> int:
    """The nearest backlog level to a backlog in seconds."""
    return int(np.argmin(np.abs(np.asarray(config.backlog_levels) - backlog_s)))


def cpu_ms(config: PipelineModelConfig, action: Action, busy: bool) -> float:
    """Expected CPU milliseconds one video second costs under an action."""
    c = config.costs
    ms = c.decode + c.audio + (c.asr_per_speech_second if busy else 0.0)
    if action.tier == "full" and action.fps > 0:
        ms += min(1.0, action.fps) * (c.yolo + c.faces) + action.fps * (c.pose_per_frame + c.motion_per_frame)
    return ms


def quality(config: PipelineModelConfig, action: Action, busy: bool) -> float:
    """Perception-quality proxy in [0, 1]: audio always, plus visual coverage weighted by scene activity."""
    visual = 1.0 - np.exp(-action.fps) if action.tier == "full" else 0.0
    return float(config.audio_weight + (1.0 - config.audio_weight) * config.visual_weight[int(busy)] * visual)


def _noise(config: PipelineModelConfig) -> np.ndarray:
    """Equally likely multiplicative service-time noise (log-normal quantiles, mean 1)."""
    z = np.array([NormalDist().inv_cdf((i + 0.5) / config.noise_points) for i in range(config.noise_points)])
    return np.exp(config.noise_sigma * z - config.noise_sigma ** 2 / 2)


def backlog_distribution(levels: np.ndarray, value: float) -> np.ndarray:
    """Stochastic rounding of a backlog in seconds onto the levels (keeps its mean below the top level)."""
    out = np.zeros(len(levels))
    if value >= levels[-1]:
        out[-1] = 1.0
        return out
    hi = int(np.searchsorted(levels, value, side="right"))
    frac = (value - levels[hi - 1]) / (levels[hi] - levels[hi - 1])
    out[hi - 1], out[hi] = 1.0 - frac, frac
    return out


def _markov(stay: float, current: bool) -> np.ndarray:
    """Distribution of a two-state exogenous flag (scene busy, machine contended) one second later."""
    return np.array([stay, 1.0 - stay]) if not current else np.array([1.0 - stay, stay])


def build_cmdp(config: PipelineModelConfig, budget_s: float) -> CMDP:
    """The controller's CMDP; `budget_s` bounds the mean latency per second over a window."""
    levels = np.asarray(config.backlog_levels)
    S, A = config.n_states, len(ACTIONS)
    noise = _noise(config)
    P, r = np.zeros((S, A, S)), np.zeros((S, A))
    cost_samples = np.zeros((S, A, len(noise)))
    for s in range(S):
        level, busy, contended = state_parts(config, s)
        exo = np.outer(_markov(config.stay_scene, busy), _markov(config.stay_load, contended))  # (busy', cont')
        for a, action in enumerate(ACTIONS):
            r[s, a] = quality(config, action, busy)
            service = cpu_ms(config, action, busy) / 1000.0 / config.cores[int(contended)] * noise
            cost_samples[s, a] = np.minimum(1.0, (levels[level] + service) / config.latency_cap_s)
            nxt_level = np.mean([backlog_distribution(levels, max(0.0, levels[level] + sv - 1.0)) for sv in service],
                                axis=0)
            # state index = (level * 2 + busy) * 2 + contended: an outer product in that order
            P[s, a] = (nxt_level[:, None, None] * exo[None]).ravel()
    mu = np.zeros(S)
    for busy in (False, True):
        for contended in (False, True):
            mu[state_index(config, 0, busy, contended)] = 0.25
    budget = config.horizon * budget_s / config.latency_cap_s
    return CMDP(P, r, cost_samples.mean(axis=2), mu, config.horizon, budget, cost_samples=cost_samples,
                deterministic_reward=True)
