"""An outside image pool for the synthetic scenes, with its truth known (MSCOCO-FG's auxiliary images).

Part of the pool is *related*: each related pool image is a variant of one target scene, drawn anew, either
with the same facts (every caption of the target describes it) or with one fact changed (one group's
colour, count or size), so some of the target's captions still describe it and others no longer do. The
rest are random scenes. Planted duplicates of target images test the import's duplicate detection: exact
byte copies, and near copies (shrunk a little and saved again as JPEG).

The truth (`pool_truth.json`): for every pool image the target it varies (or null) and how, the dataset's
captions that describe it (every fact holds, the same definition as `synthetic.holds`), and the planted
duplicates with the target image each repeats. Deterministic per seed.
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image

from annotator.scenarios.synthetic import COLORS, SIZES, Scene, SyntheticCaption, draw_scene, holds

CHANGES = ("same", "color", "count", "size")


@dataclass
class PoolScene:
    source_id: str
    scene: Scene
    related_to: int | None  # the target image id it varies
    change: str  # same, color, count, size, or random


def _variant(rng: random.Random, target: Scene, change: str, image_id: int) -> Scene:
    groups = list(target.groups)
    n = rng.randrange(len(groups))
    group = groups[n]
    if change == "color":
        group = replace(group, color=rng.choice([c for c in COLORS if c != group.color]))
    elif change == "count":
        group = replace(group, count=rng.choice([c for c in (1, 2, 3) if c != group.count]))
    elif change == "size":
        group = replace(group, size=next(s for s in SIZES if s != group.size))
    groups[n] = group
    return Scene(image_id=image_id, background=target.background, groups=tuple(groups))


def pool_scenes(
    scenes: list[Scene], *, pool_size: int, seed: int, related_share: float = 0.5, max_per_target: int = 3
) -> list[PoolScene]:
    """`pool_size` pool scenes; about `related_share` of them variants of target scenes (at most
    `max_per_target` per target), the rest random scenes."""
    from annotator.scenarios.synthetic import random_scene

    rng = random.Random(f"pool-{seed}")
    related = round(pool_size * related_share)
    targets = [scene for scene in scenes for _ in range(max_per_target)]
    rng.shuffle(targets)
    result = []
    for number in range(1, pool_size + 1):
        source_id = f"pool{number:06d}"
        if number <= related and targets:
            target = targets.pop()
            change = rng.choice(CHANGES)
            scene = _variant(rng, target, change, image_id=number)
            result.append(PoolScene(source_id, scene, target.image_id, change))
        else:
            result.append(PoolScene(source_id, random_scene(rng, number), None, "random"))
    rng.shuffle(result)  # the related ones are not the first files of the folder
    return result


def make_synthetic_pool(
    *,
    out_dir: Path | str,
    dataset_dir: Path | str,
    scenes: list[Scene],
    captions: list[SyntheticCaption],
    pool_size: int,
    seed: int,
    related_share: float = 0.5,
    exact_duplicates: int = 0,
    near_duplicates: int = 0,
    size: tuple[int, int] = (320, 240),
) -> dict:
    """Write out_dir/<source id>.png for the pool scenes plus the planted duplicates of images under
    dataset_dir/images/, and out_dir/../pool_truth.json (returned too)."""
    out_dir, dataset_dir = Path(out_dir), Path(dataset_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pool = pool_scenes(scenes, pool_size=pool_size, seed=seed, related_share=related_share)
    draw_rng = random.Random(f"pool-draw-{seed}")
    truth: dict = {"pool": {}, "described_by": {}, "duplicates": {"exact": {}, "near": {}}}
    for item in pool:
        draw_scene(item.scene, size=size, rng=draw_rng).save(
            out_dir / f"{item.source_id}.png", format="PNG", compress_level=1
        )
        truth["pool"][item.source_id] = {"related_to": item.related_to, "change": item.change}
        truth["described_by"][item.source_id] = [c.caption_id for c in captions if holds(c.facts, item.scene)]
    dup_rng = random.Random(f"pool-duplicates-{seed}")
    originals = dup_rng.sample(
        [scene.image_id for scene in scenes], min(len(scenes), exact_duplicates + near_duplicates)
    )
    for number, image_id in enumerate(originals):
        source = dataset_dir / "images" / f"{image_id:06d}.png"
        if number < exact_duplicates:
            name = f"copy{number:03d}"
            (out_dir / f"{name}.png").write_bytes(source.read_bytes())
            truth["duplicates"]["exact"][name] = image_id
        else:
            name = f"near{number:03d}"
            picture = Image.open(source).convert("RGB")
            picture = picture.resize((int(picture.width * 0.95), int(picture.height * 0.95)))
            out = io.BytesIO()
            picture.save(out, format="JPEG", quality=88)
            (out_dir / f"{name}.jpg").write_bytes(out.getvalue())
            truth["duplicates"]["near"][name] = image_id
    (out_dir.parent / "pool_truth.json").write_text(json.dumps(truth))
    return truth
