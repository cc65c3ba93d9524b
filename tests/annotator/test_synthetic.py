"""The synthetic generator: deterministic, captions say exactly their facts, truth.json is exact."""

import hashlib
import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from annotator.scenarios import synthetic
from annotator.scenarios.synthetic import (
    BACKGROUNDS,
    COLORS,
    COUNT_WORDS,
    KINDS,
    PLURALS,
    SIZE_WORDS,
    THIRD_PHRASES,
    THIRDS,
    generate,
    holds,
    make_synthetic_dataset,
    truth,
)

WORD_COUNTS = {word: n for n, words in COUNT_WORDS.items() for word in words} | {"an": 1}
WORD_SIZES = {word: size for size, words in SIZE_WORDS.items() for word in words}
PHRASE_THIRDS = {phrase: third for third, phrases in THIRD_PHRASES.items() for phrase in phrases}
PHRASE_BACKGROUNDS = {phrase: bg for bg, (_rgb, phrases) in BACKGROUNDS.items() for phrase in phrases}
NOUNS = {noun: kind for kind in KINDS for noun in (kind, PLURALS[kind])}


def _alternation(words) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


MENTION = re.compile(
    rf"\b(?P<count>{_alternation(WORD_COUNTS)}) (?:(?P<size>{_alternation(WORD_SIZES)}) )?"
    rf"(?:(?P<color>{_alternation(COLORS)}) )?(?P<noun>{_alternation(NOUNS)})\b"
    rf"(?: (?P<third>{_alternation(PHRASE_THIRDS)}))?"
)


def facts_from_text(text: str) -> set:
    """Read a caption back into facts with an independent parser of the grammar's vocabulary."""
    text = text.lower()
    facts = set()
    for match in MENTION.finditer(text):
        kind = NOUNS[match["noun"]]
        facts.add(("count", kind, WORD_COUNTS[match["count"]]))
        if match["size"]:
            facts.add(("size", kind, WORD_SIZES[match["size"]]))
        if match["color"]:
            facts.add(("color", kind, match["color"]))
        if match["third"]:
            facts.add(("pos", kind, PHRASE_THIRDS[match["third"]]))
    for phrase, bg in PHRASE_BACKGROUNDS.items():
        if text.rstrip(".").endswith(phrase):
            facts.add(("bg", bg))
    return facts


def test_each_caption_states_exactly_its_facts():
    scenes, captions = generate(images=400, seed=5)
    for caption in captions:
        assert facts_from_text(caption.text) == set(caption.facts), caption.text
        assert caption.text[0].isupper() and caption.text.endswith(".")


def test_truth_is_exactly_every_pair_whose_facts_hold_by_brute_force():
    scenes, captions = generate(images=150, seed=9)
    table = truth(captions)
    by_id = {scene.image_id: scene for scene in scenes}
    for caption in captions:
        expected = sorted(image_id for image_id, scene in by_id.items() if holds(caption.facts, scene))
        assert table["t2i"][str(caption.caption_id)] == expected
        assert caption.image_id in expected  # the original pair is always true
    for image_id, scene in by_id.items():
        expected = sorted(c.caption_id for c in captions if holds(c.facts, scene))
        assert table["i2t"][str(image_id)] == expected


def test_captions_have_a_handful_of_positives_beyond_the_original():
    for n in (300, 2000):
        scenes, captions = generate(images=n, seed=1)
        positives = [len(c.matches) for c in captions]
        assert max(positives) <= synthetic.MATCH_TARGET[1]
        assert 2.0 <= sum(positives) / len(positives) <= 8.0
        assert sum(p > 1 for p in positives) / len(positives) > 0.5  # most captions fit other images too
        assert len({c.text for c in captions}) > 0.8 * len(captions)


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def test_same_seed_same_bytes_other_seed_other_dataset(tmp_path):
    make_synthetic_dataset(out_dir=tmp_path / "a", images=30, seed=3, size=(64, 48))
    make_synthetic_dataset(out_dir=tmp_path / "b", images=30, seed=3, size=(64, 48))
    make_synthetic_dataset(out_dir=tmp_path / "c", images=30, seed=4, size=(64, 48))
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")


def test_files_have_the_coco_and_truth_shapes(tmp_path):
    summary = make_synthetic_dataset(out_dir=tmp_path, images=40, seed=2, size=(64, 48))
    coco = json.loads((tmp_path / "captions.json").read_text())
    table = json.loads((tmp_path / "truth.json").read_text())
    assert summary["images"] == 40 and summary["captions"] == 200
    assert [image["id"] for image in coco["images"]] == list(range(1, 41))
    assert all((tmp_path / "images" / image["file_name"]).is_file() for image in coco["images"])
    annotations = coco["annotations"]
    assert len(annotations) == 200 and len({a["id"] for a in annotations}) == 200
    assert not {a["id"] for a in annotations} & {image["id"] for image in coco["images"]}
    assert all(isinstance(key, str) for key in table["i2t"]) and all(isinstance(key, str) for key in table["t2i"])
    assert set(table["t2i"]) == {str(a["id"]) for a in annotations}
    pairs_t2i = {(int(c), i) for c, images in table["t2i"].items() for i in images}
    pairs_i2t = {(c, int(i)) for i, caps in table["i2t"].items() for c in caps}
    assert pairs_t2i == pairs_i2t
    assert {(a["id"], a["image_id"]) for a in annotations} <= pairs_t2i


def test_the_picture_shows_the_scene(tmp_path):
    """Background colour in the corners; each group's colour inside its third and nowhere else."""
    make_synthetic_dataset(out_dir=tmp_path, images=20, seed=8, size=(240, 180))
    scenes = json.loads((tmp_path / "scenes.json").read_text())
    for scene in scenes:
        picture = PILImage.open(tmp_path / "images" / f"{scene['image_id']:06d}.png").convert("RGB")
        bg = BACKGROUNDS[scene["background"]][0]
        assert picture.getpixel((0, 0)) == bg or any(g["third"] == "left" for g in scene["groups"])
        for third_index, third in enumerate(THIRDS):
            region = picture.crop((third_index * 80, 0, third_index * 80 + 80, 180))
            colours = {rgb for _count, rgb in region.getcolors(maxcolors=100_000)}
            groups = [g for g in scene["groups"] if g["third"] == third]
            if groups:
                assert COLORS[groups[0]["color"]] in colours
            else:
                assert colours == {bg}


def test_command_writes_the_dataset(tmp_path):
    call_command("make_synthetic_dataset", images=12, seed=1, out=str(tmp_path), size="64x48", verbosity=0)
    assert len(list((tmp_path / "images").glob("*.png"))) == 12
    assert len(json.loads((tmp_path / "captions.json").read_text())["annotations"]) == 60
    with pytest.raises(CommandError):
        call_command("make_synthetic_dataset", images=0, seed=1, out=str(tmp_path), verbosity=0)
