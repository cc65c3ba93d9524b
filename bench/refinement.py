"""Caption refinement on synthetic scenes: how well the score filter separates true proposals from wrong ones,
and what a correction HIT costs the server.

In a temporary SQLite database (the embedded default; DATABASE_URL is ignored so nothing shared is touched)
this imports N synthetic scenes, proposes for every caption the scene_facts generator's finer caption (one
true added fact), and for a fifth of the captions a wrong one instead (a colour the object does not have);
then, for each offline annotator (tfidf_pivot, minilm_pivot):

- filters the proposals (keep when the proposal scores higher with its own image than the original) and
  prints the share of true and of wrong proposals kept, and the filter's time;

and once, without a filter, a simulated careful crowd claims and submits every correction HIT through the
services: corrections per second, and the share of wrong proposals whose wrong word the crowd removed.

    .venv/bin/python bench/refinement.py --images 200

Results are printed and written to bench/out/refinement.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setup() -> None:
    path = Path(tempfile.mkdtemp()) / "refinement.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["MEDIA_ROOT"] = str(path.parent / "media")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _wrong_rows(dataset, scenes, every: int) -> tuple[list[dict], dict]:
    from annotator.scenarios import synthetic

    rows, wrong_words = [], {}
    for n, caption in enumerate(dataset.captions.select_related("image").order_by("pk")):
        if n % every:
            continue
        scene = scenes[caption.image.source_id]
        words = caption.text.rstrip(".").split()
        for group in scene["groups"]:
            noun = group["kind"] if group["count"] == 1 else synthetic.PLURALS[group["kind"]]
            if noun in words:
                wrong = next(c for c in sorted(synthetic.COLORS) if c != group["color"])
                at = words.index(noun)
                if words[at - 1] in synthetic.COLORS:
                    words[at - 1] = wrong
                else:
                    words.insert(at, wrong)
                rows.append({"caption_id": caption.source_id, "proposal": " ".join(words) + "."})
                wrong_words[caption.pk] = wrong
                break
    return rows, wrong_words


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    _setup()
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotator.crowd.services.workers import worker_for_user
    from annotator.datasets.services.imports import dataset_import
    from annotator.finegrained.services.refinement.corrections import (
        correction_claim,
        correction_submit,
    )
    from annotator.finegrained.services.refinement.proposals import (
        proposals_generate,
        proposals_import,
        refinement_create,
        refinement_filter,
        refinement_launch,
    )
    from annotator.models import CorrectionAssignment, Profile, ProposalStatus, RefinementProposal, Role
    from annotator.scenarios.scene_facts import scene_correct
    from annotator.scenarios.synthetic import make_synthetic_dataset

    def person_create(*, username: str, role: str, password: str):
        user = get_user_model().objects.create_user(username=username, password=password)
        Profile.objects.create(user=user, role=role)
        return user

    out = Path(tempfile.mkdtemp())
    make_synthetic_dataset(out_dir=out, images=args.images, seed=args.seed, size=(64, 48))
    owner = person_create(username="bench-requester", role=Role.REQUESTER, password="bench-pass-123!")
    dataset = dataset_import(
        name="bench-refine", captions_path=out / "captions.json", images_path=out / "images", owner=owner
    )
    scenes = {str(s["image_id"]): s for s in json.loads((out / "scenes.json").read_text())}
    rows, wrong_words = _wrong_rows(dataset, scenes, every=5)
    results: dict = {"images": args.images, "captions": dataset.captions.count(), "filters": {}}

    def prepare(scorer: str):
        refinement = refinement_create(dataset=dataset, owner=owner, name=f"bench-{scorer or 'none'}", scorer=scorer)
        proposals_generate(refinement=refinement, generator="scene_facts", context={"scenes": scenes})
        upload = SimpleUploadedFile("wrong.jsonl", "\n".join(json.dumps(r) for r in rows).encode())
        proposals_import(refinement=refinement, upload=upload)
        return refinement

    for scorer in ("tfidf_pivot", "minilm_pivot"):
        refinement = prepare(scorer)
        start = time.perf_counter()
        refinement_filter(refinement=refinement)
        seconds = time.perf_counter() - start
        refinement.refresh_from_db()
        if refinement.status != "ready":
            results["filters"][scorer] = {"error": refinement.error}
            continue
        proposals = RefinementProposal.objects.filter(refinement=refinement, gold="")
        true = proposals.filter(generator="scene_facts")
        wrong = proposals.filter(generator="upload")
        results["filters"][scorer] = {
            "true_proposals": true.count(),
            "true_kept": round(true.filter(status=ProposalStatus.KEPT).count() / max(true.count(), 1), 3),
            "wrong_proposals": wrong.count(),
            "wrong_kept": round(wrong.filter(status=ProposalStatus.KEPT).count() / max(wrong.count(), 1), 3),
            "seconds": round(seconds, 2),
        }

    refinement = prepare("")
    refinement_filter(refinement=refinement)
    refinement.refresh_from_db()
    refinement_launch(refinement=refinement)
    user = person_create(username="bench-worker", role=Role.WORKER, password="bench-pass-123!")
    worker = worker_for_user(user=user)
    image_source = dict(dataset.images.values_list("pk", "source_id"))
    start = time.perf_counter()
    submitted = 0
    while True:
        assignment = correction_claim(refinement=refinement, worker=worker)
        if assignment is None:
            break
        proposal = assignment.proposal
        text = scene_correct(proposal.text, scenes[image_source[proposal.caption.image_id]])
        correction_submit(assignment=assignment, worker=worker, text=text, seconds_spent=3)
        submitted += 1
    seconds = time.perf_counter() - start
    fixed = CorrectionAssignment.objects.filter(
        proposal__refinement=refinement, proposal__generator="upload", proposal__gold=""
    ).select_related("proposal")
    removed = sum(1 for a in fixed if wrong_words[a.proposal.caption_id] not in a.text.split())
    results["crowd"] = {
        "corrections": submitted,
        "per_second": round(submitted / seconds, 1),
        "wrong_word_removed": round(removed / max(len(fixed), 1), 3),
    }
    print(json.dumps(results, indent=2))
    target = ROOT / "bench" / "out"
    target.mkdir(exist_ok=True)
    (target / "refinement.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
