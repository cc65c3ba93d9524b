"""Synthetic scenes imported like a requester would, with their scenes for the scene_facts generator and a
simulated crowd that corrects proposals from the scenes' truth."""

from __future__ import annotations

import json
from pathlib import Path

from annotator.crowd.services.workers import worker_for_user
from annotator.datasets.services.imports import dataset_import
from annotator.finegrained.services.refinement.corrections import (
    correction_claim,
    correction_submit,
)
from annotator.models import Caption, Image, Role
from annotator.scenarios.scene_facts import scene_correct
from annotator.scenarios.synthetic import make_synthetic_dataset
from tests.factories import user_with_role


class RefinementWorld:
    def __init__(self, out_dir: Path, *, images: int = 24, seed: int = 5):
        make_synthetic_dataset(out_dir=out_dir, images=images, seed=seed, size=(96, 72))
        self.requester = user_with_role(Role.REQUESTER)
        self.dataset = dataset_import(
            name=f"refine-{images}-{seed}",
            captions_path=out_dir / "captions.json",
            images_path=out_dir / "images",
            owner=self.requester,
        )
        self.scenes = {str(s["image_id"]): s for s in json.loads((out_dir / "scenes.json").read_text())}
        self.caption_pk = dict(Caption.objects.filter(dataset=self.dataset).values_list("source_id", "pk"))
        self.image_source = dict(Image.objects.filter(dataset=self.dataset).values_list("pk", "source_id"))

    def scene_of(self, proposal) -> dict:
        return self.scenes[self.image_source[proposal.caption.image_id]]


def new_worker():
    return worker_for_user(user=user_with_role(Role.WORKER))


def crowd_work(world: RefinementWorld, refinement, worker, *, careful: bool = True, limit: int = 1000) -> list:
    """Claim and submit until nothing is left: a careful worker writes what the scene shows (accepting a
    true proposal as it is); a careless one accepts everything."""
    done = []
    for _ in range(limit):
        assignment = correction_claim(refinement=refinement, worker=worker)
        if assignment is None:
            break
        proposal = assignment.proposal
        text = scene_correct(proposal.text, world.scene_of(proposal)) if careful else proposal.text
        done.append(correction_submit(assignment=assignment, worker=worker, text=text, seconds_spent=4))
    return done
