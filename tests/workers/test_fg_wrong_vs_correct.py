"""MSCOCO-FG Fig. 10 from the command line: an annotator picks between a proposal a worker corrected (a wrong
colour) and the corrected text, for their image. On synthetic scenes the image's other captions name the
right colour, so tf-idf through them mostly prefers the corrected text."""

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.finegrained.services.refinement.proposals import proposals_import, refinement_create
from annotator.models import CaptionVersion, RefinementProposal, VersionSource
from annotator.scenarios import synthetic
from tests.annotator.finegrained.refinement_support import RefinementWorld

pytestmark = pytest.mark.django_db


def _wrong_colour(world, caption) -> str | None:
    scene = world.scenes[world.image_source[caption.image_id]]
    words = caption.text.rstrip(".").split()
    for group in scene["groups"]:
        for noun in (group["kind"], synthetic.PLURALS[group["kind"]]):
            if noun in words:
                wrong = next(c for c in sorted(synthetic.COLORS) if c != group["color"])
                at = words.index(noun)
                if words[at - 1] in synthetic.COLORS:
                    words[at - 1] = wrong
                else:
                    words.insert(at, wrong)
                return " ".join(words) + "."
    return None


def test_the_annotator_mostly_prefers_the_corrected_text(tmp_path):
    world = RefinementWorld(tmp_path, images=24)
    with pytest.raises(CommandError, match="no approved corrections"):
        call_command("fg_wrong_vs_correct", "--dataset", world.dataset.name)
    refinement = refinement_create(dataset=world.dataset, owner=world.requester, name="fig10", scorer="")
    rows = []
    for caption in world.dataset.captions.order_by("pk")[:96:3]:
        wrong = _wrong_colour(world, caption)
        if wrong:
            rows.append(f'{caption.source_id},"{wrong}"')
    proposals_import(
        refinement=refinement,
        upload=SimpleUploadedFile("wrong.csv", ("caption_id,proposal\n" + "\n".join(rows)).encode()),
    )
    for proposal in RefinementProposal.objects.filter(refinement=refinement).select_related("caption"):
        # The worker's correction put the right colour back: the original text is the corrected one.
        CaptionVersion.objects.create(
            caption=proposal.caption,
            version=2,
            text=proposal.caption.text,
            source=VersionSource.CORRECTION,
            proposal=proposal,
            approved_by=world.requester,
        )
    out = StringIO()
    call_command("fg_wrong_vs_correct", "--dataset", world.dataset.name, stdout=out)
    result = json.loads(out.getvalue())
    assert result["pairs"] == len(rows) > 10
    assert result["right"] + result["wrong"] + result["tied"] == result["pairs"]
    assert result["accuracy"] > 0.6, json.dumps(result)
