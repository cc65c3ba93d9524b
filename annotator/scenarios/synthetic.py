"""Synthetic scenes with a complete, exact truth of which caption describes which image.

A scene is a background and one to three groups of objects. A group is one kind of object (a ball, a
box, a tree, ...), in one colour and one size, one to three of them, in one third of the picture (left, middle,
right); a kind appears at most once per scene, a third holds at most one group. Pillow draws it.

A caption is a set of *facts* about the scene, written out by a small grammar:

- ``("count", kind, n)``  -- "two balls": the scene has exactly n objects of that kind
  (every mentioned object carries its count, so "a ball" never silently describes three balls);
- ``("color", kind, colour)`` -- "two red balls": the objects of that kind are that colour;
- ``("pos", kind, third)`` -- "... on the left": the objects of that kind are in that third;
- ``("size", kind, size)`` -- "two small balls": the objects of that kind are big or small;
- ``("bg", background)`` -- "... on a sandy beach".

Caption c describes image i iff every fact of c holds in i. Because the scenes are known, the truth is
computed exactly from an inverted index (fact -> images where it holds), and `truth.json` lists every
true pair, the original ones and the many others, as COCO has them. A caption keeps adding facts of its
own scene until it matches at most a small random number of images (3 to 10), so each caption has a
handful of positives whatever N is (for N in the hundreds to the tens of thousands).

Everything is drawn from one `random.Random(seed)`: the same seed and N give byte-identical files.
Image ids are 1..N; caption ids are 1_000_000 + 5 * (image_id - 1) + k for k in 0..4, so the two id
spaces never overlap (a bug that mixes them up cannot pass by accident).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw

KINDS = ("ball", "box", "star", "tree", "house", "car", "kite", "fish")
PLURALS = {
    "ball": "balls",
    "box": "boxes",
    "star": "stars",
    "tree": "trees",
    "house": "houses",
    "car": "cars",
    "kite": "kites",
    "fish": "fish",
}
COLORS = {
    "red": (220, 40, 40),
    "blue": (40, 80, 220),
    "green": (30, 150, 50),
    "yellow": (245, 210, 30),
    "purple": (140, 60, 180),
    "orange": (245, 140, 20),
    "white": (250, 250, 250),
    "black": (20, 20, 20),
}
BACKGROUNDS = {
    "grass": ((120, 190, 90), ("on a grassy field", "on the grass", "in a green meadow")),
    "beach": ((235, 215, 160), ("on a sandy beach", "on the sand", "at the beach")),
    "snow": ((235, 240, 250), ("in the snow", "on a snowy field", "on white snow")),
    "street": ((140, 140, 145), ("on a city street", "on grey asphalt", "on the road")),
    "sky": ((150, 200, 245), ("against a blue sky", "in the sky", "under a clear blue sky")),
}
THIRDS = ("left", "middle", "right")
SIZES = ("big", "small")
SIZE_WORDS = {"big": ("big", "large"), "small": ("small", "little")}
THIRD_PHRASES = {
    "left": ("on the left", "on the left side", "at the left"),
    "middle": ("in the middle", "in the centre", "in the center"),
    "right": ("on the right", "on the right side", "at the right"),
}
COUNT_WORDS = {1: ("a", "one", "a single"), 2: ("two", "a pair of"), 3: ("three",)}
CAPTIONS_PER_IMAGE = 5
CAPTION_ID_BASE = 1_000_000
MATCH_TARGET = (3, 10)  # a caption stops adding facts once it matches at most this many images

Fact = tuple


@dataclass(frozen=True)
class Group:
    kind: str
    color: str
    count: int
    third: str
    size: str = "big"


@dataclass
class Scene:
    image_id: int
    background: str
    groups: tuple[Group, ...]

    def facts(self) -> set[Fact]:
        facts: set[Fact] = {("bg", self.background)}
        for group in self.groups:
            facts |= {
                ("count", group.kind, group.count),
                ("color", group.kind, group.color),
                ("pos", group.kind, group.third),
                ("size", group.kind, group.size),
            }
        return facts

    def as_json(self) -> dict:
        return {
            "image_id": self.image_id,
            "background": self.background,
            "groups": [group.__dict__ for group in self.groups],
        }


@dataclass
class SyntheticCaption:
    caption_id: int
    image_id: int
    facts: frozenset
    text: str
    matches: list[int] = field(default_factory=list)  # every image this caption truly describes
    coarse: bool = False  # planted coarse: one object and its count, fitting many images


def caption_id_for(image_id: int, k: int) -> int:
    return CAPTION_ID_BASE + CAPTIONS_PER_IMAGE * (image_id - 1) + k


def random_scene(rng: random.Random, image_id: int) -> Scene:
    n_groups = rng.choice((1, 2, 2, 3))
    kinds = rng.sample(KINDS, n_groups)
    thirds = rng.sample(THIRDS, n_groups)
    groups = tuple(
        Group(kind=kind, color=rng.choice(tuple(COLORS)), count=rng.randint(1, 3), third=third, size=rng.choice(SIZES))
        for kind, third in zip(kinds, thirds, strict=False)
    )
    return Scene(image_id=image_id, background=rng.choice(tuple(BACKGROUNDS)), groups=groups)


def holds(facts: frozenset | set, scene: Scene) -> bool:
    """The definition of the truth: every fact of the caption holds in the scene."""
    return set(facts) <= scene.facts()


class FactIndex:
    """fact -> the images where it holds, as a bitset (bit i-1 = image i); a caption's matches are an AND."""

    def __init__(self, scenes: list[Scene]):
        self.index: dict[Fact, int] = {}
        for scene in scenes:
            bit = 1 << (scene.image_id - 1)
            for fact in scene.facts():
                self.index[fact] = self.index.get(fact, 0) | bit

    def bits(self, facts) -> int:
        facts = list(facts)
        if not facts:
            raise ValueError("a caption states at least one fact")
        result = self.index.get(facts[0], 0)
        for fact in facts[1:]:
            result &= self.index.get(fact, 0)
        return result

    def matches(self, facts) -> set[int]:
        bits = self.bits(facts)
        result = set()
        while bits:
            low = bits & -bits
            result.add(low.bit_length())
            bits ^= low
        return result


def _choose_facts(rng: random.Random, scene: Scene, index: FactIndex, target: int) -> frozenset:
    """Start from one object and its count, add facts of this scene until few images match."""
    groups = list(scene.groups)
    rng.shuffle(groups)
    mentioned = [groups[0]]
    first = ("count", groups[0].kind, groups[0].count)
    facts = {first}
    matching = index.index[first]
    while matching.bit_count() > target:
        options: list[Fact] = []
        for group in mentioned:
            options += [
                ("color", group.kind, group.color),
                ("pos", group.kind, group.third),
                ("size", group.kind, group.size),
            ]
        options.append(("bg", scene.background))
        options = [fact for fact in options if fact not in facts]
        unmentioned = [group for group in groups if group not in mentioned]
        if unmentioned:
            options.append(("count", unmentioned[0].kind, unmentioned[0].count))
        if not options:
            break
        fact = rng.choice(options)
        facts.add(fact)
        matching &= index.index[fact]
        if fact[0] == "count":
            mentioned.append(unmentioned[0])
    return frozenset(facts)


def _object_phrase(rng: random.Random, facts: frozenset, group: Group) -> str:
    count = group.count
    words = [rng.choice(COUNT_WORDS[count])]
    if ("size", group.kind, group.size) in facts:
        words.append(rng.choice(SIZE_WORDS[group.size]))
    if ("color", group.kind, group.color) in facts:
        words.append(group.color)
    words.append(group.kind if count == 1 else PLURALS[group.kind])
    if words[0] == "a" and words[1][0] in "aeiou":
        words[0] = "an"
    phrase = " ".join(words)
    if ("pos", group.kind, group.third) in facts:
        phrase += " " + rng.choice(THIRD_PHRASES[group.third])
    return phrase


def render_caption(rng: random.Random, facts: frozenset, scene: Scene) -> str:
    """Write the facts as one English sentence that states exactly those facts and no others."""
    groups = [group for group in scene.groups if ("count", group.kind, group.count) in facts]
    rng.shuffle(groups)
    phrases = [_object_phrase(rng, facts, group) for group in groups]
    objects = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    background = ""
    if ("bg", scene.background) in facts:
        background = " " + rng.choice(BACKGROUNDS[scene.background][1])
    template = rng.choice(
        (
            "{objects}{background}.",
            "A picture of {objects}{background}.",
            "There is {objects}{background}.",
            "An image showing {objects}{background}.",
            "A drawing of {objects}{background}.",
        )
    )
    text = template.format(objects=objects, background=background)
    if template.startswith("There is") and groups[0].count > 1:
        text = "There are" + text[len("There is") :]
    return text[0].upper() + text[1:]


def generate(
    *, images: int, seed: int, coarse_share: float = 0.0, fine: bool = False
) -> tuple[list[Scene], list[SyntheticCaption]]:
    """Scenes, five captions each, and each caption's exact matches; deterministic per seed.

    `fine`: every ordinary caption states every fact of its scene (five paraphrases of one full
    description), so it picks out its image. `coarse_share`: that share of the captions is
    planted coarse, one object and its count ("Two balls."), a fact that fits many images (MSCOCO-FG's
    coarse-grained texts); `coarse_planted` lists them. The defaults draw exactly what they always drew.
    """
    if images < 1:
        raise ValueError("images must be at least 1")
    rng = random.Random(seed)
    coarse_rng = random.Random(f"coarse-{seed}")
    scenes = [random_scene(rng, image_id) for image_id in range(1, images + 1)]
    index = FactIndex(scenes)
    captions: list[SyntheticCaption] = []
    for scene in scenes:
        seen: set[frozenset] = set()
        for k in range(CAPTIONS_PER_IMAGE):
            facts = frozenset()
            if coarse_share > 0 and coarse_rng.random() < coarse_share:
                group = coarse_rng.choice(scene.groups)
                facts = frozenset({("count", group.kind, group.count)})
                seen.add(facts)
                captions.append(
                    SyntheticCaption(
                        caption_id=caption_id_for(scene.image_id, k),
                        image_id=scene.image_id,
                        facts=facts,
                        text=render_caption(coarse_rng, facts, scene),
                        matches=sorted(index.matches(facts)),
                        coarse=True,
                    )
                )
                continue
            for _attempt in range(1 if fine else 8):  # prefer five different fact sets; tiny scenes may repeat one
                facts = (
                    frozenset(scene.facts()) if fine else _choose_facts(rng, scene, index, rng.randint(*MATCH_TARGET))
                )
                if facts not in seen:
                    break
            seen.add(facts)
            captions.append(
                SyntheticCaption(
                    caption_id=caption_id_for(scene.image_id, k),
                    image_id=scene.image_id,
                    facts=facts,
                    text=render_caption(rng, facts, scene),
                    matches=sorted(index.matches(facts)),
                )
            )
    return scenes, captions


def truth(captions: list[SyntheticCaption]) -> dict:
    """`{"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}` with string keys."""
    i2t: dict[int, list[int]] = {}
    t2i: dict[str, list[int]] = {}
    for caption in captions:
        t2i[str(caption.caption_id)] = list(caption.matches)
        for image_id in caption.matches:
            i2t.setdefault(image_id, []).append(caption.caption_id)
    return {"i2t": {str(image_id): sorted(ids) for image_id, ids in sorted(i2t.items())}, "t2i": t2i}


def instances(scenes: list[Scene]) -> dict:
    """The scenes' objects as a COCO instances file: one category per kind, one annotation per object
    (so PMRP, which compares the images' sets of object kinds, has exact instance classes)."""
    category_id = {kind: index for index, kind in enumerate(KINDS, start=1)}
    annotations = []
    for scene in scenes:
        for group in scene.groups:
            for _ in range(group.count):
                annotations.append(
                    {"id": len(annotations) + 1, "image_id": scene.image_id, "category_id": category_id[group.kind]}
                )
    return {
        "categories": [{"id": category_id[kind], "name": kind, "supercategory": "object"} for kind in KINDS],
        "annotations": annotations,
    }


# Drawing ---------------------------------------------------------------------------------------------


def _outline(color: tuple) -> tuple:
    return (90, 90, 90) if sum(color) < 120 else (20, 20, 20)


def _draw_object(draw: ImageDraw.ImageDraw, kind: str, cx: float, cy: float, r: float, color: tuple) -> None:
    line = _outline(color)
    if kind == "ball":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=color, outline=line, width=2)
    elif kind == "box":
        draw.rectangle((cx - r, cy - r, cx + r, cy + r), fill=color, outline=line, width=2)
    elif kind == "star":
        points = []
        for i in range(10):
            radius = r if i % 2 == 0 else r * 0.45
            angle = -math.pi / 2 + i * math.pi / 5
            points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
        draw.polygon(points, fill=color, outline=line)
    elif kind == "tree":
        draw.rectangle((cx - r * 0.15, cy + r * 0.2, cx + r * 0.15, cy + r), fill=(110, 70, 30), outline=line)
        draw.polygon(
            [(cx, cy - r), (cx - r * 0.75, cy + r * 0.3), (cx + r * 0.75, cy + r * 0.3)], fill=color, outline=line
        )
    elif kind == "house":
        draw.rectangle((cx - r * 0.7, cy - r * 0.1, cx + r * 0.7, cy + r), fill=color, outline=line, width=2)
        draw.polygon(
            [(cx - r * 0.9, cy - r * 0.1), (cx, cy - r), (cx + r * 0.9, cy - r * 0.1)], fill=(150, 40, 30), outline=line
        )
        draw.rectangle((cx - r * 0.15, cy + r * 0.45, cx + r * 0.15, cy + r), fill=(80, 50, 20))
    elif kind == "car":
        draw.rectangle((cx - r, cy - r * 0.15, cx + r, cy + r * 0.45), fill=color, outline=line, width=2)
        draw.rectangle((cx - r * 0.5, cy - r * 0.55, cx + r * 0.45, cy - r * 0.15), fill=color, outline=line)
        for wx in (cx - r * 0.55, cx + r * 0.55):
            draw.ellipse((wx - r * 0.25, cy + r * 0.3, wx + r * 0.25, cy + r * 0.8), fill=(30, 30, 30))
    elif kind == "kite":
        draw.polygon(
            [(cx, cy - r), (cx + r * 0.6, cy), (cx, cy + r * 0.8), (cx - r * 0.6, cy)], fill=color, outline=line
        )
        draw.line([(cx, cy + r * 0.8), (cx - r * 0.3, cy + r * 1.1), (cx + r * 0.1, cy + r * 1.3)], fill=line, width=2)
    elif kind == "fish":
        draw.ellipse((cx - r, cy - r * 0.5, cx + r * 0.5, cy + r * 0.5), fill=color, outline=line, width=2)
        draw.polygon([(cx + r * 0.4, cy), (cx + r, cy - r * 0.5), (cx + r, cy + r * 0.5)], fill=color, outline=line)
        draw.ellipse((cx - r * 0.7, cy - r * 0.15, cx - r * 0.5, cy + r * 0.05), fill=(0, 0, 0))
    else:  # pragma: no cover - KINDS is closed
        raise ValueError(kind)


def draw_scene(scene: Scene, *, size: tuple[int, int], rng: random.Random) -> Image.Image:
    width, height = size
    picture = Image.new("RGB", size, BACKGROUNDS[scene.background][0])
    draw = ImageDraw.Draw(picture)
    third_width = width / 3
    for group in scene.groups:
        left = THIRDS.index(group.third) * third_width
        scale = 1.0 if group.size == "big" else 0.55
        # The same radius whatever the count, so "big" and "small" mean the same in every picture.
        radius = min(third_width / 4.2, height / 9.0) * scale * rng.uniform(0.9, 1.0)
        slot = height / group.count
        for n in range(group.count):  # one above the other so the count stays readable
            cx = left + third_width / 2 + rng.uniform(-third_width * 0.12, third_width * 0.12)
            cy = slot * (n + 0.5)
            _draw_object(draw, group.kind, cx, cy, radius, COLORS[group.color])
    return picture


def make_synthetic_dataset(
    *,
    out_dir: Path | str,
    images: int,
    seed: int,
    size: tuple[int, int] = (320, 240),
    progress=None,
    coarse_share: float = 0.0,
    fine: bool = False,
) -> dict:
    """Write out_dir/images/<id>.png, out_dir/captions.json (COCO form), out_dir/truth.json, scenes.json and
    out_dir/instances.json (the objects as COCO instance annotations).

    Deterministic per (images, seed, size); writing again over the same directory gives the same files.
    Returns a summary with the counts and the mean number of positives per caption.
    """
    out_dir = Path(out_dir)
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    scenes, captions = generate(images=images, seed=seed, coarse_share=coarse_share, fine=fine)
    draw_rng = random.Random(f"draw-{seed}")
    coco_images = []
    for done, scene in enumerate(scenes, start=1):
        file_name = f"{scene.image_id:06d}.png"
        draw_scene(scene, size=size, rng=draw_rng).save(out_dir / "images" / file_name, format="PNG", compress_level=1)
        coco_images.append({"id": scene.image_id, "file_name": file_name, "width": size[0], "height": size[1]})
        if progress:
            progress(done, len(scenes))
    coco = {
        "info": {"description": f"Vericap synthetic scenes, seed {seed}", "version": "1"},
        "images": coco_images,
        "annotations": [{"id": c.caption_id, "image_id": c.image_id, "caption": c.text} for c in captions],
    }
    (out_dir / "captions.json").write_text(json.dumps(coco, indent=None))
    truth_data = truth(captions)
    if coarse_share > 0:
        truth_data["coarse_planted"] = [c.caption_id for c in captions if c.coarse]
    (out_dir / "truth.json").write_text(json.dumps(truth_data))
    (out_dir / "scenes.json").write_text(json.dumps([scene.as_json() for scene in scenes]))
    (out_dir / "instances.json").write_text(json.dumps(instances(scenes)))
    positives = [len(c.matches) for c in captions]
    return {
        "images": len(scenes),
        "captions": len(captions),
        "positives_per_caption_mean": sum(positives) / len(positives),
        "positives_per_caption_max": max(positives),
        "out_dir": str(out_dir),
    }
