"""Tier (a): deterministic rules over live signals, for risks that must not wait for a log segment.

Each rule is a small state machine over consecutive seconds, so a single noisy second neither fires
nor resets it: a fall must be followed by the person staying down, an alarm must be heard while
people stay, camera trouble must last. Rules return `Alert`s; cooldown and dedup happen in the monitor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from models.safety.alerts import Alert
from models.safety.signals import SecondSignals

ALARM_TAGS = ("Smoke detector, smoke alarm", "Fire alarm", "Alarm", "Siren", "Civil defense siren")
DISTRESS_TAGS = ("Screaming", "Shout", "Yell", "Children shouting", "Crying, sobbing", "Wail, moan")
IMPACT_TAGS = ("Thump, thud", "Bang", "Smash, crash", "Slam", "Glass", "Shatter", "Breaking")
CHILD_TAGS = ("Child speech, kid speaking", "Baby cry, infant cry", "Children playing", "Babbling")
CHILD_OBJECTS = ("child", "baby", "kid", "toddler")
HAZARD_OBJECTS = ("knife", "scissors", "oven", "microwave", "toaster", "sink", "hair drier", "fire",
                  "stove", "bottle")
HELP_SPEECH = re.compile(
    r"\b(help( me| us)?(?=\s*[!.]|\s*$)|help me|somebody help|call (an )?ambulance|"
    r"call (the )?(police|fire brigade)|call (911|112|999)|i can'?t breathe|i can'?t get up|save me)\b",
    re.IGNORECASE,
)


@dataclass
class FastRuleConfig:
    """Thresholds of the live rules (seconds, probabilities, image heights per second)."""

    tag_prob: float = 0.5          # an audio tag counts when at least this probable
    fall_velocity: float = 0.8     # downward body-centre speed that counts as a fall
    down_s: float = 5.0            # a fallen person must stay lying this long
    fall_memory_s: float = 3.0     # lying this soon after a fall or loud impact counts as fallen
    alarm_stay_s: float = 10.0     # alarm heard and people still present this long
    child_hazard_s: float = 2.0    # child and hazard object seen together this long
    camera_trouble_s: float = 3.0  # camera unusable this long
    lying_still_s: float = 10.0    # a tracked person lying without moving this long (the tracker's stillness cue)
    hazard_objects: tuple[str, ...] = HAZARD_OBJECTS


@dataclass
class _State:
    fall_at: float | None = None
    impact_at: float | None = None
    down_since: float | None = None
    alarm_since: float | None = None
    child_hazard_since: float | None = None
    trouble: str | None = None
    trouble_since: float | None = None
    fired: set[str] = field(default_factory=set)


class FastRules:
    """Feeds seconds in time order; returns the alerts that became true at that second."""

    def __init__(self, cfg: FastRuleConfig | None = None):
        self.cfg = cfg or FastRuleConfig()
        self.state = _State()

    def update(self, s: SecondSignals) -> list[Alert]:
        return [a for a in (self._fall(s), self._alarm(s), self._child(s), self._distress(s),
                            self._camera(s), *self._still(s)) if a is not None]

    def _once(self, key: str, active: bool) -> bool:
        """True the first second `key` holds; re-armed once it stops holding."""
        if not active:
            self.state.fired.discard(key)
            return False
        if key in self.state.fired:
            return False
        self.state.fired.add(key)
        return True

    def _fall(self, s: SecondSignals) -> Alert | None:
        c, st = self.cfg, self.state
        if any(float(p.get("vertical_velocity", 0.0)) >= c.fall_velocity for p in s.pose):
            st.fall_at = s.time
        if s.tag(*IMPACT_TAGS) >= c.tag_prob:
            st.impact_at = s.time
        lying = any(p.get("posture") == "lying" for p in s.pose)
        if not lying:
            st.down_since = None
            self._once("fall", False)
            return None
        recent = [t for t in (st.fall_at, st.impact_at) if t is not None and s.time - t <= c.fall_memory_s]
        if st.down_since is None and recent:
            st.down_since = min(recent)
        if st.down_since is None or s.time - st.down_since < c.down_s or not self._once("fall", True):
            return None
        cause = "a fast downward motion" if st.fall_at is not None and st.fall_at >= st.down_since else "a loud impact"
        return Alert(time=s.time, severity="critical", rule="A person who has fallen must be checked on at once",
                     reason=f"Someone went down after {cause} and has stayed lying for "
                            f"{s.time - st.down_since:.0f} s; they may be injured or unconscious.",
                     evidence=[f"t={st.down_since:.1f}s {cause}", f"t={s.time:.1f}s still lying"])

    def _alarm(self, s: SecondSignals) -> Alert | None:
        c, st = self.cfg, self.state
        if s.tag(*ALARM_TAGS) < c.tag_prob or s.people() == 0:
            st.alarm_since = None
            self._once("alarm", False)
            return None
        st.alarm_since = s.time if st.alarm_since is None else st.alarm_since
        if s.time - st.alarm_since < c.alarm_stay_s or not self._once("alarm", True):
            return None
        return Alert(time=s.time, severity="critical", rule="Leave the building when a smoke or fire alarm sounds",
                     reason=f"An alarm has sounded for {s.time - st.alarm_since:.0f} s and "
                            f"{s.people()} person(s) are still here.",
                     evidence=[f"t={st.alarm_since:.1f}s alarm starts", f"t={s.time:.1f}s people still present"])

    def _child(self, s: SecondSignals) -> Alert | None:
        c, st = self.cfg, self.state
        child = any(s.objects.get(k, 0) > 0 for k in CHILD_OBJECTS) or s.tag(*CHILD_TAGS) >= c.tag_prob
        hazards = sorted(k for k in c.hazard_objects if s.objects.get(k, 0) > 0)
        if not (child and hazards):
            st.child_hazard_since = None
            self._once("child", False)
            return None
        st.child_hazard_since = s.time if st.child_hazard_since is None else st.child_hazard_since
        if s.time - st.child_hazard_since < c.child_hazard_s or not self._once("child", True):
            return None
        return Alert(time=s.time, severity="warning", rule="Keep children away from dangerous objects",
                     reason=f"A child is near {', '.join(hazards)}.",
                     evidence=[f"t={st.child_hazard_since:.1f}s child with {', '.join(hazards)}"])

    def _distress(self, s: SecondSignals) -> Alert | None:
        words = HELP_SPEECH.search(s.speech_text or "")
        scream = s.tag(*DISTRESS_TAGS)
        if not self._once("distress", bool(words) or scream >= self.cfg.tag_prob):
            return None
        if words:
            return Alert(time=s.time, severity="critical", rule="Respond to calls for help",
                         reason=f'Someone called out "{words.group(0)}".',
                         evidence=[f't={s.time:.1f}s speech: "{s.speech_text.strip()}"'])
        return Alert(time=s.time, severity="warning", rule="Respond to calls for help",
                     reason="Screaming or shouting was heard.",
                     evidence=[f"t={s.time:.1f}s distress sound p={scream:.2f}"])

    def _still(self, s: SecondSignals) -> list[Alert]:
        """A tracked person lying still: once per track while it holds (re-armed when they move or get up)."""
        alerts = []
        for person in s.still:
            key = f"still{person['track_id']}"
            held = bool(person.get("lying")) and float(person.get("still_s", 0.0)) >= self.cfg.lying_still_s
            if self._once(key, held):
                alerts.append(Alert(
                    time=s.time, severity="warning", rule="A person lying still must be checked on",
                    reason=f"Person #{person['track_id']} has been lying without moving for "
                           f"{float(person['still_s']):.0f} s; they may need help.",
                    evidence=[f"t={s.time:.1f}s track {person['track_id']} still {float(person['still_s']):.0f} s, "
                              "lying"]))
        return alerts

    def _camera(self, s: SecondSignals) -> Alert | None:
        st = self.state
        if s.camera_trouble != st.trouble:
            st.trouble, st.trouble_since = s.camera_trouble, s.time
            self._once("camera", False)
        if st.trouble is None or s.time - st.trouble_since < self.cfg.camera_trouble_s:
            return None
        if not self._once("camera", True):
            return None
        severity = "warning" if st.trouble == "covered" else "info"
        return Alert(time=s.time, severity=severity, rule="The safety camera must keep a clear view",
                     reason=f"{camera_name(s.camera)} has been {st.trouble} for {s.time - st.trouble_since:.0f} s; "
                            "risks in its view cannot be seen.",
                     evidence=[f"t={st.trouble_since:.1f}s camera {st.trouble}"])


def camera_name(camera: str | None) -> str:
    """"The camera" for the default (unnamed) one, else "Camera <name>" (never "Camera camera")."""
    return f"Camera {camera}" if camera and camera.lower() != "camera" else "The camera"
