"""Caption versions: every text a caption has had, original first; a new text is a new version."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotator.core.errors import ApplicationError
from annotator.crowd.models.crowd import Worker
from annotator.datasets.models.dataset import Caption
from annotator.finegrained.models.refinement import CaptionVersion, RefinementProposal, VersionSource

MAX_CAPTION_CHARS = 1000


def caption_version_add(
    *,
    caption: Caption,
    text: str,
    source: str,
    generator: str = "",
    proposal: RefinementProposal | None = None,
    worker: Worker | None = None,
    approved_by=None,
    edit_distance: int | None = None,
) -> CaptionVersion:
    """Store `text` as the caption's next version (its original becomes version 1 on the first change).

    Takes SELECT ... FOR UPDATE on the Caption row, so two changes at once get versions n and n + 1; the
    unique (caption, version) constraint backs that up. Not idempotent: each call is a new version, except
    that a text equal to the current one is refused (409), so a retried approval does not add a copy.
    """
    text = " ".join((text or "").split())
    if not text:
        raise ApplicationError("A caption cannot be empty.")
    if len(text) > MAX_CAPTION_CHARS:
        raise ApplicationError(f"A caption may have at most {MAX_CAPTION_CHARS} characters.")
    if source not in (VersionSource.PROPOSAL, VersionSource.CORRECTION):
        raise ApplicationError(f"Unknown version source {source!r}.")
    with transaction.atomic():
        locked = Caption.objects.select_for_update().get(pk=caption.pk)
        latest = CaptionVersion.objects.filter(caption=locked).order_by("-version").first()
        if latest is None:
            latest = CaptionVersion.objects.create(
                caption=locked, version=1, text=locked.text, source=VersionSource.ORIGINAL
            )
        if latest.text == text:
            raise ApplicationError("The caption already reads like that.", status=409)
        version = CaptionVersion(
            caption=locked,
            version=latest.version + 1,
            text=text,
            source=source,
            generator=generator,
            proposal=proposal,
            worker=worker,
            approved_by=approved_by,
            edit_distance=edit_distance,
        )
        version.full_clean()
        try:
            version.save()
        except IntegrityError:
            raise ApplicationError("The caption changed at the same moment; try again.", status=409) from None
    return version
