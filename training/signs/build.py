"""Build the labelled sign set: signs (a generated word list) rendered with the installed Debian fonts onto real
scikit-image photos, as 640 x 360 video frames, with perspective, scale and colour variation.

Splits are disjoint by background photo AND by sign text: a photo or a sign text feeds one split only
(`tests/test_text_on_screen.py` proves it on the built manifest). Nothing here is trained; val selects the
reader's settings and test is scored once (`benchmarks/signs_ocr.py`).

    python -m training.signs.build --out data/signs   # writes <out>/<split>/<id>.png and <out>/manifest.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation",
             "/usr/share/fonts/truetype/freefont", "/usr/share/fonts/truetype/noto")
FRAME = (640, 360)

# Real photos in scikit-image's data (no generated images; `cat` is `chelsea` again, so it is left out).
PHOTOS = {"val": ("astronaut", "chelsea", "hubble_deep_field", "brick", "camera", "coins"),
          "test": ("coffee", "rocket", "stereo_motorcycle", "immunohistochemistry", "grass", "gravel", "moon",
                   "retina")}

_SAFETY = ["EXIT", "WET FLOOR", "NO ENTRY", "DANGER HIGH VOLTAGE", "FIRE EXIT", "KEEP OUT", "STOP",
           "AUTHORISED PERSONNEL ONLY", "CAUTION HOT SURFACE", "NO SMOKING", "EMERGENCY EXIT", "FIRST AID",
           "MIND THE GAP", "DO NOT ENTER", "SLIPPERY WHEN WET", "HARD HAT AREA", "FIRE ALARM", "NO PARKING",
           "TOXIC GAS", "EYE WASH STATION", "FORKLIFT TRAFFIC", "ASSEMBLY POINT", "PUSH BAR", "PULL"]
_SHOPS = ["BAKERY", "PHARMACY", "Coffee Shop", "BOOKS", "Hotel Astoria", "FLOWERS", "Pizza Roma", "BANK",
          "Fresh Market", "Post Office", "CINEMA", "Tailor", "BUTCHER", "Green Grocer", "LAUNDRY", "Museum",
          "TICKETS", "Information", "TOILETS", "CAFE", "Library", "Hardware Store", "OPEN", "CLOSED"]


def sign_texts() -> list[str]:
    """The generated word list: safety signs, shop names, platform and gate numbers, street names."""
    texts = _SAFETY + _SHOPS
    texts += [f"PLATFORM {n}" for n in (1, 2, 3, 4, 5, 7, 9, 12)] + [f"GATE {g}" for g in ("A3", "B12", "C7", "D21")]
    texts += [f"{name} STREET" for name in ("KING", "HIGH", "MILL", "CHURCH")] + ["EXIT 42", "ROOM 101", "LEVEL 2"]
    return texts


def split_texts(texts: list[str], seed: int = 0) -> dict[str, list[str]]:
    """Sign texts shuffled and dealt half to val, half to test (a text is in one split only). EXIT and WET
    FLOOR go to test: the pipeline's examples name them."""
    rest = [t for t in texts if t not in ("EXIT", "WET FLOOR")]
    random.Random(seed).shuffle(rest)
    half = len(rest) // 2
    return {"val": rest[:half], "test": ["EXIT", "WET FLOOR"] + rest[half:]}


def fonts() -> list[Path]:
    """The TrueType fonts installed (Debian fonts-dejavu at least); SystemExit naming the package if none."""
    found = sorted(p for d in FONT_DIRS for p in Path(d).glob("*.ttf") if "Math" not in p.name)
    if not found:
        raise SystemExit("no TrueType fonts: install Debian's fonts-dejavu-core (scripts/bootstrap.sh)")
    return found


def photo(name: str) -> np.ndarray:
    """A scikit-image photo as RGB uint8 (grey photos repeated to three channels)."""
    from skimage import data

    img = getattr(data, name)()
    img = np.asarray(img[0] if isinstance(img, tuple) else img)  # stereo_motorcycle: (left, right, disparity)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    return np.ascontiguousarray(img[:, :, :3]).astype(np.uint8)


def background(img: np.ndarray, rng: random.Random) -> np.ndarray:
    """A random 16:9 crop of a photo, resized to the frame size."""
    import cv2

    h, w = img.shape[:2]
    cw = min(w, int(h * 16 / 9))
    cw = int(cw * rng.uniform(0.7, 1.0))
    ch = int(cw * 9 / 16)
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    return cv2.resize(img[y:y + ch, x:x + cw], FRAME, interpolation=cv2.INTER_AREA)


def render_plate(text: str, font: Path, height: int, fg: tuple, bg: tuple) -> np.ndarray:
    """A sign plate: `text` in `font`, `height` pixels of cap height, on a coloured board with a margin."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(str(font), height)
    x0, y0, x1, y1 = face.getbbox(text)
    pad = max(4, height // 3)
    plate = Image.new("RGB", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), bg)
    ImageDraw.Draw(plate).text((pad - x0, pad - y0), text, font=face, fill=fg)
    return np.asarray(plate)


def place(frame: np.ndarray, plate: np.ndarray, rng: random.Random, tilt: float) -> tuple[np.ndarray, list[float]]:
    """`plate` warped by a random perspective (corners moved by up to `tilt` of its size) onto `frame`; the
    frame and the plate's box [x0, y0, x1, y1]."""
    import cv2

    ph, pw = plate.shape[:2]
    W, H = FRAME
    scale = min(1.0, 0.9 * W / pw, 0.5 * H / ph)
    pw2, ph2 = pw * scale, ph * scale
    ox, oy = rng.uniform(0, W - pw2), rng.uniform(0, H - ph2)
    src = np.float32([[0, 0], [pw, 0], [pw, ph], [0, ph]])
    dst = np.float32([[ox, oy], [ox + pw2, oy], [ox + pw2, oy + ph2], [ox, oy + ph2]])
    dst += np.float32([[rng.uniform(-tilt, tilt) * pw2, rng.uniform(-tilt, tilt) * ph2] for _ in range(4)])
    dst[:, 0], dst[:, 1] = dst[:, 0].clip(0, W - 1), dst[:, 1].clip(0, H - 1)
    m = cv2.getPerspectiveTransform(src, dst)
    warped = cv2.warpPerspective(plate, m, FRAME, flags=cv2.INTER_LINEAR)
    mask = cv2.warpPerspective(np.full((ph, pw), 255, np.uint8), m, FRAME) > 127
    out = frame.copy()
    out[mask] = warped[mask]
    box = [float(dst[:, 0].min()), float(dst[:, 1].min()), float(dst[:, 0].max()), float(dst[:, 1].max())]
    return out, [round(v, 1) for v in box]


COLOURS = [((255, 255, 255), (0, 120, 50)), ((255, 255, 255), (200, 20, 20)), ((0, 0, 0), (250, 200, 0)),
           ((255, 255, 255), (20, 60, 160)), ((0, 0, 0), (240, 240, 235)), ((250, 230, 120), (40, 40, 40))]


def sign_frame(text: str, photo_rgb: np.ndarray, rng: random.Random, font_list: list[Path]) -> tuple[np.ndarray, dict]:
    """One frame with one sign on a crop of a photo, and what it says and where."""
    fg, bg = rng.choice(COLOURS)
    font = rng.choice(font_list)
    plate = render_plate(text, font, rng.randint(16, 44), fg, bg)
    frame, box = place(background(photo_rgb, rng), plate, rng, tilt=rng.uniform(0.0, 0.12))
    return frame, {"text": text, "font": font.name, "box": box, "fg": list(fg), "bg": list(bg)}


def build(out: Path, per_text: int = 3, seed: int = 0) -> dict:
    """Render every split: each sign text `per_text` times on that split's photos; writes the manifest."""
    from PIL import Image

    rng = random.Random(seed)
    font_list = fonts()
    texts = split_texts(sign_texts(), seed)
    manifest: dict = {"seed": seed, "frame": list(FRAME), "splits": {}}
    for split, names in PHOTOS.items():
        photos = {n: photo(n) for n in names}
        items = []
        (out / split).mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(texts[split]):
            for k in range(per_text):
                name = names[(i * per_text + k) % len(names)]
                frame, item = sign_frame(text, photos[name], rng, font_list)
                item.update(id=f"{split}-{i:03d}-{k}", photo=name, file=f"{split}/{split}-{i:03d}-{k}.png")
                Image.fromarray(frame).save(out / item["file"])
                items.append(item)
        manifest["splits"][split] = items
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("data/signs"))
    p.add_argument("--per-text", type=int, default=3, help="frames per sign text (default 3)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.per_text < 1:
        print("--per-text must be at least 1", file=sys.stderr)
        return 2
    m = build(args.out, args.per_text, args.seed)
    for split, items in m["splits"].items():
        print(f"{split}: {len(items)} frames, {len({i['text'] for i in items})} signs, "
              f"{len({i['photo'] for i in items})} photos")
    print(f"wrote {args.out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
