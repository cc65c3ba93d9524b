"""Captions that are not descriptions (ECCV App. C.1), by their text alone: no database."""

import pytest

from annotator.analysis.caption_cleanup import caption_not_description_reasons


@pytest.mark.parametrize(
    "text",
    [
        "I am unable to see an image above.",
        "There is no image here to provide a caption for.",
        "The first picture is blank all the time on purpose.",
        "Why is my first one a blank every time.",
        "ok",
    ],
)
def test_eccv_invalid_captions_are_caught(text):
    assert caption_not_description_reasons(text)


@pytest.mark.parametrize("text", ["A man riding a wave on top of a surfboard.", "I see two dogs on the grass."])
def test_descriptions_pass(text):
    assert caption_not_description_reasons(text) == []
