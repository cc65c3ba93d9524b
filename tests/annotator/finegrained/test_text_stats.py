"""MSCOCO-FG Table 3: nouns, adjectives and length of the coarse and the refined texts, from the tagger the
requirements ship (its weights read as plain data only) and from `manage.py finegrained texts`."""

import io
import json
import pickle
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.analysis.text_stats import _DataOnly, tagged_words, text_stats
from annotator.finegrained.services.refinement.versions import caption_version_add
from annotator.models import VersionSource
from tests import factories


def test_a_coarse_and_a_refined_caption_are_counted_as_a_person_would():
    coarse = text_stats(["Two balls."])
    refined = text_stats(["A man in a black top rides a green and white bike on a sunny day."])
    assert (coarse.texts, coarse.nouns, coarse.adjectives, coarse.avg_length) == (1, 1, 0, 2.0)
    # man, top, bike, day; black, green, white, sunny; 16 words (the full stop is not one).
    assert (refined.nouns, refined.adjectives, refined.avg_length) == (4, 4, 16.0)
    assert [word for word, tag in tagged_words("a red cup.") if tag.startswith("JJ")] == ["red"]
    empty = text_stats([])
    assert empty.texts == 0 and empty.avg_nouns is None


def test_the_weights_reader_builds_only_plain_data():
    weights = ({"a": 1}, {"b": "NN"}, {"NN"})
    assert _DataOnly(io.BytesIO(pickle.dumps(weights))).load() == weights
    with pytest.raises(pickle.UnpicklingError, match="plain data"):
        _DataOnly(io.BytesIO(pickle.dumps(StringIO()))).load()


@pytest.mark.django_db
def test_finegrained_texts_prints_table_3_for_the_refined_captions():
    dataset = factories.DatasetFactory(name="fg-texts")
    refined = factories.CaptionFactory(image=factories.ImageFactory(dataset=dataset), text="Two balls.")
    caption_version_add(caption=refined, text="Two red balls on a wooden table.", source=VersionSource.CORRECTION)
    factories.CaptionFactory(image=factories.ImageFactory(dataset=dataset), text="A dog.")  # never refined
    out = StringIO()
    call_command("finegrained", "texts", "--dataset", "fg-texts", stdout=out)
    table = json.loads(out.getvalue())
    assert table["coarse"] == text_stats(["Two balls."]).as_dict()
    assert table["refined"]["texts"] == 1 and table["refined"]["nouns"] == 2 and table["refined"]["adjectives"] == 2
    assert table["refined"]["avg_length"] == 7.0
    with pytest.raises(CommandError, match="no refined caption"):
        call_command("finegrained", "texts", "--dataset", factories.DatasetFactory(name="plain").name)
