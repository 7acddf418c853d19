"""`foresight eval perception`: how the default output does on real recordings that no training clip used.

The report replays the live parser (`ParserStage`: the union of PreFM and the taggers, exactly as
`foresight analyze` runs it) over the stored per-second features of a corpus-v3 split, and scores its
events against the recordings' LLP labels:

- per-class audio and visual event F1 at tIoU 0.5 (PreFM events count as their own class; an AudioSet tag
  counts for a class when it is that class's name or a related one, "Music" for none; a COCO object for the
  class it shows, a person for none);
- false events per minute on the split's eventless clips (real background, no target event);
- word error rate of the default recognizer on the split's recorded English voices (tuxpaint's stamp
  descriptions, `training/experiments/asr_tuxpaint_en.py`);
- grounding R@1 at IoU 0.3 and 0.5, mIoU and abstention accuracy (`training/trisense/evaluate.py`).

The VAD's speech spans are not stored with the features, so replayed Speech comes from PreFM alone, as it
does live whenever the checkpoint covers Speech.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models.audio.tags import top_tags
from models.prefm.labels import LLP_CLASSES
from models.prefm.metrics import pooled_class_f1
from models.taxonomy import LLP_COCO, audioset_names, heard_as
from pipelines.stages.audio import TAGS_HANDED_ON
from training.corpus.layout import load_truths

GENERIC = {"Music"}  # a parent of every instrument: evidence for no single class
COCO_LLP = {coco: llp for llp, coco in LLP_COCO.items() if llp != "Speech"}


def tag_classes() -> dict[str, list[int]]:
    """AudioSet name -> the LLP classes (indices) it is evidence for."""
    table: dict[str, list[int]] = {}
    for i, llp in enumerate(LLP_CLASSES):
        for name in heard_as(llp) - GENERIC:
            table.setdefault(name, []).append(i)
    return table


def event_classes(event: dict, table: dict[str, list[int]]) -> list[int]:
    """The LLP classes one output event speaks for."""
    if event.get("taxonomy") == "llp" or event.get("source") == "prefm":
        return [LLP_CLASSES.index(event["label"])] if event["label"] in LLP_CLASSES else []
    if event["modality"] == "audio":
        return table.get(event["label"], [])
    llp = COCO_LLP.get(event["label"].lower())
    return [LLP_CLASSES.index(llp)] if llp else []


def llp_predictions(events: list[dict], seconds: int) -> dict[str, np.ndarray]:
    """Per modality, (T, 25) LLP predictions from output events (audio-visual counts for both)."""
    table = tag_classes()
    pred = {m: np.zeros((seconds, len(LLP_CLASSES)), np.int64) for m in ("audio", "visual")}
    for e in events:
        mods = ("audio", "visual") if e["modality"] == "audio-visual" else (e["modality"],)
        for c in event_classes(e, table):
            for m in mods:
                pred[m][int(e["start"]):int(np.ceil(e["end"])), c] = 1
    return pred


def replay(parser, audio: np.ndarray, visual: np.ndarray, labels: list[str]) -> list[dict]:
    """The parser's events over one clip's stored features, one second at a time as live."""
    from pipelines.stages.record import Second

    speech = {"spans": [], "speech_prob": 0.0, "transcript": []}
    events: list[dict] = []
    names = audioset_names()
    for t in range(len(audio)):
        probs = audio[t, :521]
        tags = top_tags(probs, names, **TAGS_HANDED_ON)
        best = visual[t, 80:160]
        detections = [{"label": labels[i], "score": float(best[i])} for i in np.flatnonzero(best > 0)]
        record = Second(index=t, start=float(t), end=float(t + 1))
        out = parser.process(record, speech, {"vector": audio[t], "available": True, "tags": tags},
                             {"vector": visual[t], "available": True, "visual": {"detections": detections}})
        events += out.events_closed
    return events + parser.finish(speech).events_closed


def pooled_f1(preds: list[np.ndarray], gts: list[np.ndarray]) -> dict[str, float]:
    """Per-class event F1 at tIoU 0.5, counts pooled over clips, for the classes present in the truth."""
    return {LLP_CLASSES[c]: round(f1, 3) for c, f1 in pooled_class_f1(preds, gts, 5).items()}


def event_report(corpus: Path, split: str, config=None) -> dict:
    """Per-class event F1 per modality and false events per minute on eventless clips, for the parser that
    `config` (a `StageConfig`, default the shipped defaults) builds."""
    from models.encoders.weights import yolo_files
    from pipelines.stages.config import StageConfig
    from pipelines.stages.parser import ParserStage
    from training.corpus.layout import check_corpus_yamnet

    config = config or StageConfig()
    check_corpus_yamnet(corpus, config.yamnet)
    labels = [n.strip() for n in yolo_files()[2].read_text().splitlines() if n.strip()]
    preds: dict[str, list] = {"audio": [], "visual": []}
    gts: dict[str, list] = {"audio": [], "visual": []}
    false_events, eventless_s, clips = 0, 0, 0
    for truth in load_truths(corpus):
        if truth.split != split:
            continue
        feats = {m: np.load(corpus / "embedded" / m / f"{truth.clip_id}.npy") for m in ("audio", "visual")}
        gt = {m: np.load(corpus / "label" / "label" / m / f"{truth.clip_id}.npy") for m in ("audio", "visual")}
        seconds = min(len(feats["audio"]), len(feats["visual"]), len(gt["audio"]))
        events = replay(ParserStage(config), feats["audio"][:seconds], feats["visual"][:seconds], labels)
        pred = llp_predictions(events, seconds)
        clips += 1
        for m in ("audio", "visual"):
            preds[m].append(pred[m])
            gts[m].append(gt[m][:seconds])
        if not (gt["audio"].any() or gt["visual"].any()):
            eventless_s += seconds
            false_events += sum(len(_runs(pred[m])) for m in ("audio", "visual"))
    out: dict = {"split": split, "clips": clips}
    for m in ("audio", "visual"):
        per_class = pooled_f1(preds[m], gts[m])
        out[f"{m}_event_f1"] = {"mean": round(float(np.mean(list(per_class.values()))), 3) if per_class else None,
                                "classes": len(per_class), "per_class": per_class}
    out["false_events_per_min"] = round(60.0 * false_events / eventless_s, 2) if eventless_s else None
    out["eventless_seconds"] = eventless_s
    return out


def _runs(pred: np.ndarray) -> list[tuple[int, int]]:
    from models.prefm.metrics import extract_events

    return [run for c in range(pred.shape[1]) for run in extract_events(pred[:, c])]


def asr_report(corpus: Path, split: str, model: str = "tiny.en") -> dict:
    """WER of `model` on recorded English voices no other split used: tuxpaint's English descriptions that the
    split holds or that the corpus left out altogether (the corpus draws its voices from other languages)."""
    from training.corpus.real_sources import TUXPAINT_STAMPS, english_descriptions
    from training.experiments.asr_tuxpaint_en import bench
    from training.media.synth import load_audio

    splits = json.loads((corpus / "sources.json").read_text())
    items = []
    for path, ref in english_descriptions():
        key = f"tuxpaint:{path.relative_to(TUXPAINT_STAMPS)}"
        if splits.get(key, split) == split:
            items.append((key, load_audio(path), ref))
    if not items:
        return {"model": model, "files": 0, "wer": None}
    result = bench(model, items)
    return {k: result[k] for k in ("model", "files", "ref_words", "wer", "wer_first_0.3s_cut", "rtf")}


def perception_report(corpus: Path, split: str = "test", config=None, asr: bool = True,
                      grounding: bool = True) -> dict:
    """Everything `foresight eval perception` prints, as one dict (events from the parser `config` builds)."""
    from pipelines.stages.config import StageConfig

    config = config or StageConfig()
    report = {"corpus": str(corpus), "events": config.events_model, "prefm_threshold": config.prefm_threshold,
              **event_report(corpus, split, config)}
    if asr:
        report["asr"] = asr_report(corpus, split)
    if grounding:
        from training.trisense.generalise import perception_grounding

        report["grounding"] = perception_grounding(corpus, split)
    return report
