"""A refinement's proposals: create the refinement, bring proposals (an uploaded file or a generator),
filter them by a machine annotator's score, and launch the kept ones as correction HITs."""

from __future__ import annotations

import csv
import io
import json

from django.db import transaction
from django.utils import timezone

from annotator.analysis.refinement import CaptionInput, Proposal, generator_get, proposals_parse
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import JobState, job_state
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_on_commit
from annotator.datasets.models.dataset import Caption, Dataset, DatasetStatus
from annotator.finegrained.models.refinement import (
    REFINEMENT_TRANSITIONS,
    ProposalStatus,
    Refinement,
    RefinementProposal,
    RefinementStatus,
)
from annotator.finegrained.selectors.refinement import caption_texts_current

SCORERS = ("tfidf_pivot", "minilm_pivot")
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
MAX_ERRORS_SHOWN = 20


def refinement_transition(*, refinement: Refinement, target: str, **changes) -> Refinement:
    """Move a refinement along its state machine under its row lock; 409 for a transition it does not allow."""
    with transaction.atomic():
        locked = Refinement.objects.select_for_update().get(pk=refinement.pk)
        check_transition(transitions=REFINEMENT_TRANSITIONS, current=locked.status, target=target, what="refinement")
        locked.status = target
        for field, value in changes.items():
            setattr(locked, field, value)
        locked.save()
    return locked


def refinement_create(
    *, dataset: Dataset, owner, name: str, scorer: str = "tfidf_pivot", reward_cents: int = 5
) -> Refinement:
    """A new refinement (draft) on a ready dataset. Not idempotent: each call is a new refinement."""
    name = " ".join((name or "").split())
    if not name:
        raise ApplicationError("Give the refinement a name.")
    if dataset.status != DatasetStatus.READY:
        raise ApplicationError("The dataset is not ready yet.", status=409)
    if scorer not in ("", *SCORERS):
        raise ApplicationError(f"The filter must be one of {', '.join(SCORERS)}, or none.")
    refinement = Refinement(dataset=dataset, owner=owner, name=name[:200], scorer=scorer, reward_cents=reward_cents)
    refinement.full_clean()
    refinement.save()
    return refinement


def _store(*, refinement: Refinement, proposals: list[Proposal], generator: str) -> dict:
    """Replace the refinement's proposals for these captions (a later upload wins). Caller holds the row lock."""
    current = caption_texts_current(dataset=refinement.dataset)
    captions = {p.caption_id for p in proposals}
    RefinementProposal.objects.filter(refinement=refinement, caption_id__in=captions).delete()
    rows = [
        RefinementProposal(
            refinement=refinement,
            caption_id=p.caption_id,
            original_text=current[p.caption_id],
            text=p.text,
            generator=generator,
            gold=p.gold,
            gold_wrong_words=p.gold_wrong_words,
        )
        for p in proposals
        if p.gold or p.text != current[p.caption_id]
    ]
    RefinementProposal.objects.bulk_create(rows)
    return {
        "generator": generator,
        "proposals": sum(1 for r in rows if not r.gold),
        "gold": sum(1 for r in rows if r.gold),
        "unchanged": len(proposals) - len(rows),
    }


def _locked_draft(refinement: Refinement) -> Refinement:
    locked = Refinement.objects.select_for_update().get(pk=refinement.pk)
    if locked.status not in (RefinementStatus.DRAFT, RefinementStatus.READY):
        raise ApplicationError("Proposals can only be added before the correction HITs go live.", status=409)
    return locked


def _read_rows(data: bytes, name: str) -> list[dict]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ApplicationError("The proposals file is not UTF-8 text.") from None
    if name.endswith((".jsonl", ".ndjson")):
        rows = []
        for line_number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ApplicationError(f"Line {line_number} is not JSON: {error.msg}.") from None
            if not isinstance(row, dict):
                raise ApplicationError(f"Line {line_number} must be a JSON object.")
            rows.append(row)
        return rows
    if name.endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text))
        missing = {"caption_id", "proposal"} - set(reader.fieldnames or [])
        if missing:
            raise ApplicationError(
                f"The CSV header must name caption_id and proposal; missing: {', '.join(sorted(missing))}."
            )
        return list(reader)
    raise ApplicationError("The proposals file must be .csv or .jsonl.")


def proposals_import(*, refinement: Refinement, upload) -> dict:
    """Proposals from an uploaded CSV or JSONL file (caption_id = the caption's source id, proposal[, gold,
    wrong_words]). All or nothing: any bad row refuses the whole file (400) with the offending lines in
    extra["errors"]. Takes the refinement's row lock; uploading again replaces those captions' proposals."""
    if upload is None:
        raise ApplicationError("Choose a proposals file.")
    if upload.size > MAX_UPLOAD_BYTES:
        raise ApplicationError(f"The proposals file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB.")
    rows = _read_rows(upload.read(), (upload.name or "").lower())
    if not rows:
        raise ApplicationError("The proposals file has no rows.")
    known = dict(Caption.objects.filter(dataset_id=refinement.dataset_id).values_list("source_id", "pk"))
    proposals, errors = proposals_parse(rows, known=known)
    if errors:
        shown = "; ".join(f"row {e['line']}: {e['message']}" for e in errors[:3])
        raise ApplicationError(
            f"{len(errors)} bad row(s) in the proposals file - {shown}", extra={"errors": errors[:MAX_ERRORS_SHOWN]}
        )
    with transaction.atomic():
        locked = _locked_draft(refinement)
        report = _store(refinement=locked, proposals=proposals, generator="upload")
        locked.report = {**locked.report, "import": report}
        locked.save(update_fields=["report"])
    return report


def proposals_generate(
    *, refinement: Refinement, generator: str, caption_ids: list[int] | None = None, context: dict | None = None
) -> dict:
    """Proposals from a registered generator (annotator/analysis/refinement.py) for the chosen captions
    (the coarse ones, or all when `caption_ids` is None). Takes the refinement's row lock."""
    try:
        plugin = generator_get(generator)
    except KeyError as error:
        raise ApplicationError(str(error.args[0])) from None
    context = dict(context or {})
    missing = [key for key in plugin.needs if not context.get(key)]
    if missing:
        raise ApplicationError(f"The {generator} generator needs: {', '.join(missing)}.")
    current = caption_texts_current(dataset=refinement.dataset)
    captions = Caption.objects.filter(dataset_id=refinement.dataset_id).select_related("image")
    if caption_ids is not None:
        captions = captions.filter(pk__in=caption_ids)
    inputs = [CaptionInput(c.pk, c.image.source_id, current[c.pk]) for c in captions.order_by("pk")]
    proposals = plugin.propose(inputs, context)
    with transaction.atomic():
        locked = _locked_draft(refinement)
        report = _store(refinement=locked, proposals=proposals, generator=generator)
        locked.report = {**locked.report, "generate": report}
        locked.save(update_fields=["report"])
    return report


def refinement_filter(*, refinement: Refinement) -> Refinement:
    """Queue the score filter (workers.tasks.refinement.refinement_score_task): draft/ready -> scoring.
    Without a scorer every proposal is kept at once (draft -> ready)."""
    if not RefinementProposal.objects.filter(refinement=refinement).exists():
        raise ApplicationError("There are no proposals to filter yet.")
    if not refinement.scorer:
        with transaction.atomic():
            RefinementProposal.objects.filter(refinement=refinement, status=ProposalStatus.PENDING).update(
                status=ProposalStatus.KEPT
            )
            return refinement_transition(refinement=refinement, target=RefinementStatus.READY, error="")
    with transaction.atomic():
        moved = refinement_transition(
            refinement=refinement, target=RefinementStatus.SCORING, error="", queued_at=timezone.now()
        )
        enqueue_on_commit(task_names.REFINEMENT_SCORE, refinement.pk)
    return moved


def refinement_filter_retry(*, refinement: Refinement) -> Refinement:
    """The progress widget's Retry and the sweep: a failed filter (a draft with an error) is queued again;
    a stalled one (scoring, no sign of life for its stale time) gets its task sent again. Takes the row
    lock; anything else is a 409. Scoring twice is harmless: proposals_score_store acts once."""
    with transaction.atomic():
        locked = Refinement.objects.select_for_update().get(pk=refinement.pk)
        state = job_state(locked)
        if state == JobState.FAILED:
            return refinement_filter(refinement=locked)
        if state != JobState.STALLED:
            raise ApplicationError("Only a failed or stalled filter can be retried.", status=409)
        locked.queued_at = timezone.now()
        locked.save(update_fields=["queued_at", "updated_at"])
        enqueue_on_commit(task_names.REFINEMENT_SCORE, locked.pk)
    return locked


def proposals_score_store(*, refinement_id: int, scores: dict[int, tuple[float, float]]) -> Refinement:
    """Store (original score, proposal score) per proposal pk and keep a proposal only when its own image
    scores it higher than the original (MSCOCO-FG Sec. 3.2.3); gold proposals are kept whatever they score.
    scoring -> ready. Idempotent: a refinement no longer scoring is left alone. Takes its row lock."""
    with transaction.atomic():
        locked = Refinement.objects.select_for_update().get(pk=refinement_id)
        if locked.status != RefinementStatus.SCORING:
            return locked
        proposals = list(RefinementProposal.objects.filter(refinement=locked))
        kept = dropped = 0
        for proposal in proposals:
            if proposal.pk not in scores:
                continue
            proposal.original_score, proposal.proposal_score = scores[proposal.pk]
            if proposal.gold or proposal.proposal_score > proposal.original_score:
                proposal.status = ProposalStatus.KEPT
                kept += not proposal.gold
            else:
                proposal.status = ProposalStatus.DROPPED
                dropped += 1
        RefinementProposal.objects.bulk_update(proposals, ["original_score", "proposal_score", "status"])
        locked.report = {**locked.report, "filter": {"scorer": locked.scorer, "kept": kept, "dropped": dropped}}
        locked.status = RefinementStatus.READY
        locked.save(update_fields=["report", "status"])
    return locked


def refinement_fail(*, refinement_id: int, message: str) -> None:
    """The filter failed: back to draft with the message. Idempotent."""
    with transaction.atomic():
        locked = Refinement.objects.select_for_update().get(pk=refinement_id)
        if locked.status == RefinementStatus.SCORING:
            locked.status, locked.error = RefinementStatus.DRAFT, message[:2000]
            locked.save(update_fields=["status", "error"])


def refinement_launch(*, refinement: Refinement) -> Refinement:
    """ready -> live: the kept proposals become correction HITs for workers."""
    if not RefinementProposal.objects.filter(refinement=refinement, status=ProposalStatus.KEPT, gold="").exists():
        raise ApplicationError("No proposal was kept; there is nothing for workers to correct.", status=409)
    return refinement_transition(refinement=refinement, target=RefinementStatus.LIVE)


def refinement_finish(*, refinement: Refinement) -> Refinement:
    return refinement_transition(refinement=refinement, target=RefinementStatus.FINISHED)
