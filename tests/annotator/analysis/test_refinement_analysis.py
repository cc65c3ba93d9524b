"""The pure parts of caption refinement: the word diff, the edit distance, gold checks, the proposals file
parser, and the scene_facts generator's promise (it adds one true fact that narrows the caption)."""

from annotator.analysis.refinement import (
    CaptionInput,
    edit_distance,
    generator_get,
    gold_check,
    proposals_parse,
    word_diff,
)
from annotator.scenarios import synthetic
from annotator.scenarios.scene_facts import _stated, scene_correct


def test_word_diff_marks_the_added_words_only():
    segments = word_diff("Two balls.", "Two red balls on the left.")
    assert [(s["text"], s["added"]) for s in segments] == [
        ("Two", False),
        ("red", True),
        ("balls", False),  # "balls." and "balls" are one word
        ("on the left.", True),
    ]
    assert word_diff("A dog.", "A dog.") == [{"text": "A dog.", "added": False, "removed": []}]
    assert word_diff("A big dog.", "A dog.")[-1]["removed"] == ["big"]


def test_edit_distance_counts_characters():
    assert edit_distance("red", "red") == 0
    assert edit_distance("two red balls", "two rad balls") == 1
    assert edit_distance("two red balls", "two blue balls") == 4
    assert edit_distance("", "abc") == 3 and edit_distance("abc", "") == 3


def test_gold_checks():
    assert gold_check(expect="accept", proposal="Two red balls.", submitted="Two  red balls.", wrong_words=[])
    assert not gold_check(expect="accept", proposal="Two red balls.", submitted="Two balls.", wrong_words=[])
    assert gold_check(expect="fix", proposal="A blue box.", submitted="A green box.", wrong_words=["blue"])
    assert not gold_check(expect="fix", proposal="A blue box.", submitted="A blue box.", wrong_words=["blue"])
    assert not gold_check(expect="fix", proposal="A blue box.", submitted="One blue box.", wrong_words=["blue"])


def test_proposals_parse_names_every_bad_row():
    proposals, errors = proposals_parse(
        [
            {"caption_id": "1", "proposal": "  A   finer one. "},
            {"caption_id": "", "proposal": "x"},
            {"caption_id": "9", "proposal": "x"},
            {"caption_id": "1", "proposal": ""},
            {"caption_id": "1", "proposal": "y", "gold": "fix", "wrong_words": "red big"},
            {"caption_id": "1", "proposal": "z"},
            {"caption_id": "1", "proposal": "z", "gold": "maybe"},
        ],
        known={"1": 101},
    )
    assert [(p.caption_id, p.text, p.gold, p.gold_wrong_words) for p in proposals] == [
        (101, "A finer one.", "", []),
        (101, "y", "fix", ["red", "big"]),
    ]
    assert [e["line"] for e in errors] == [2, 3, 4, 6, 7]


def test_scene_facts_adds_one_true_fact_that_narrows_the_caption():
    scenes, captions = synthetic.generate(images=80, seed=4)
    by_id = {scene.image_id: scene for scene in scenes}
    index = synthetic.FactIndex(scenes)
    inputs = [CaptionInput(c.caption_id, str(c.image_id), c.text) for c in captions]
    context = {"scenes": {str(s.image_id): s.as_json() for s in scenes}}
    proposals = generator_get("scene_facts").propose(inputs, context)
    assert len(proposals) > len(captions) / 2
    own = {c.caption_id: c for c in captions}
    narrowed = 0
    for proposal in proposals:
        caption = own[proposal.caption_id]
        scene = by_id[caption.image_id]
        before, _ = _stated(caption.text.split(), caption.text, scene, synthetic)
        after, _ = _stated(proposal.text.split(), proposal.text, scene, synthetic)
        assert before < after and after <= scene.facts()  # strictly more facts, all of them true
        assert caption.image_id in index.matches(after)
        narrowed += len(index.matches(after)) < len(index.matches(before))
        assert scene_correct(proposal.text, scene) == proposal.text  # a careful worker accepts it as it is
    assert narrowed > len(proposals) / 2
