"""Post-processing as in ECCV Caption App. C, and imports of external label sets.

1. Captions that are not descriptions ("I am unable to see an image above") are found by heuristics on
   the text and by the crowd rejecting the caption's own (original) pair; original pairs the crowd
   rejects are listed too. Both become CleanupProposals that the requester confirms or dismisses.
2. An external label set (Crisscrossed Captions CSV, ECCV Caption JSON) is imported as Labels with
   method `external`, one more source next to the crowd's.
"""

from __future__ import annotations

import csv
import io
import json
import re

from django.db import transaction
from django.utils import timezone

from annotator.errors import ApplicationError
from annotator.models import (
    AggregationMethod,
    Campaign,
    Caption,
    CleanupKind,
    CleanupProposal,
    CleanupStatus,
    Image,
    Label,
    Pair,
    PairKind,
)

# Phrases of captions written by people who saw no picture or did not describe it (ECCV App. C.1 list).
NOT_DESCRIPTION_PATTERNS = [
    (re.compile(r"\b(no|not an?|any)\s+(image|picture|photo)s?\b", re.I), "says there is no image"),
    (
        re.compile(r"\b(unable|can ?not|can'?t|cant|could ?n[o']?t)\s+(to\s+)?(see|view|load|tell)\b", re.I),
        "says it cannot see",
    ),
    (
        re.compile(
            r"\b(blank|empty)\s+(image|picture|page|screen)|\bis\s+(a\s+)?blank\b|\ba blank(\s+every|\s*[.!?]|\s*$)",
            re.I,
        ),
        "mentions a blank image",
    ),
    (re.compile(r"^\s*(why|what|how|where|who)\b.*\b(i|my|me|you)\b", re.I), "a question to someone"),
    (re.compile(r"\b(this|the)\s+(hit|task|page)\b", re.I), "talks about the task"),
    (re.compile(r"\b(i|my|me)\b\s", re.I), "first person"),
    (re.compile(r"\?\s*$"), "a question"),
    (re.compile(r"\b(i\s+don'?t\s+know|no\s+idea)\b", re.I), "does not know"),
]
MIN_WORDS = 3
MAX_IMPORT_BYTES = 50 * 1024 * 1024


def caption_not_description_reasons(text: str) -> list[str]:
    """Why a caption looks like it is not a description of an image ([] when it looks fine)."""
    reasons = [reason for pattern, reason in NOT_DESCRIPTION_PATTERNS if pattern.search(text or "")]
    if len((text or "").split()) < MIN_WORDS:
        reasons.append(f"fewer than {MIN_WORDS} words")
    # First person alone is weak evidence ("I see two dogs" is still a description): needs company.
    if reasons == ["first person"]:
        return []
    return reasons


def _crowd_negative_originals(campaign: Campaign) -> dict[int, dict]:
    """Original pairs whose labels say negative, keyed by caption id, with the votes as evidence."""
    result = {}
    labels = Label.objects.filter(pair__campaign=campaign, pair__is_original=True, is_positive=False).select_related(
        "pair"
    )
    for label in labels:
        entry = result.setdefault(
            label.pair.caption_id, {"pair_id": label.pair_id, "methods": {}, "votes": label.answer_count}
        )
        entry["methods"][label.method] = {"choice": label.choice, "confidence": round(label.confidence, 3)}
    return result


def cleanup_detect(*, campaign: Campaign) -> dict:
    """List captions that are not descriptions and original pairs the crowd rejects as CleanupProposals.

    Idempotent: proposals are upserted on (campaign, kind, caption); a proposal the requester already
    decided keeps its decision (its evidence is refreshed). No row locks beyond the unique constraint.
    Returns how many of each kind are proposed.
    """
    rejected = _crowd_negative_originals(campaign)
    created = {CleanupKind.NOT_A_DESCRIPTION: 0, CleanupKind.ORIGINAL_REJECTED: 0}
    with transaction.atomic():
        for caption in Caption.objects.filter(dataset_id=campaign.dataset_id).only("pk", "text", "image_id"):
            reasons = caption_not_description_reasons(caption.text)
            crowd = rejected.get(caption.pk)
            if reasons:
                evidence = {"heuristics": reasons, "text": caption.text[:300]}
                if crowd:
                    evidence["crowd"] = crowd
                _upsert(campaign, CleanupKind.NOT_A_DESCRIPTION, caption, crowd and crowd["pair_id"], evidence)
                created[CleanupKind.NOT_A_DESCRIPTION] += 1
            if crowd:
                evidence = {"crowd": crowd, "text": caption.text[:300]}
                _upsert(campaign, CleanupKind.ORIGINAL_REJECTED, caption, crowd["pair_id"], evidence)
                created[CleanupKind.ORIGINAL_REJECTED] += 1
    return {str(kind): n for kind, n in created.items()}


def _upsert(campaign, kind, caption, pair_id, evidence) -> None:
    proposal, made = CleanupProposal.objects.get_or_create(
        campaign=campaign, kind=kind, caption=caption, defaults={"pair_id": pair_id, "evidence": evidence}
    )
    if not made and (proposal.evidence != evidence or proposal.pair_id != pair_id):
        proposal.evidence, proposal.pair_id = evidence, pair_id
        proposal.save(update_fields=["evidence", "pair_id"])


def cleanup_decide(*, proposal: CleanupProposal, actor, confirm: bool) -> CleanupProposal:
    """The requester confirms the removal or keeps the caption/pair; who and when are kept.

    Locks the proposal row; deciding again overwrites the earlier decision (the new actor and time).
    """
    with transaction.atomic():
        locked = CleanupProposal.objects.select_for_update().get(pk=proposal.pk)
        locked.status = CleanupStatus.CONFIRMED if confirm else CleanupStatus.DISMISSED
        locked.decided_by = actor
        locked.decided_at = timezone.now()
        locked.save(update_fields=["status", "decided_by", "decided_at"])
        return locked


def cleanup_removed_caption_ids(*, campaign: Campaign) -> set[int]:
    """Captions whose removal the requester confirmed (exports leave them and their pairs out)."""
    return set(
        CleanupProposal.objects.filter(campaign=campaign, status=CleanupStatus.CONFIRMED).values_list(
            "caption_id", flat=True
        )
    )


# ------------------------------------------------------------------------------------------- imports


def _source_key(value) -> str:
    """A source id as the dataset keeps it: "391895", also from "COCO_val2014_000000391895.jpg" or 391895.0."""
    text = str(value).strip()
    if re.fullmatch(r"\d+(\.0+)?", text):
        return str(int(float(text)))
    digits = re.findall(r"\d+", text)
    return str(int(digits[-1])) if digits else text


def _parse_cxc_csv(text: str) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text))
    needed = {"caption", "image", "agg_score"}
    if not reader.fieldnames or not needed <= {f.strip() for f in reader.fieldnames}:
        raise ApplicationError(
            "A Crisscrossed Captions CSV needs the columns caption,image,agg_score(,sampling_method)."
        )
    rows, bad = [], []
    for number, row in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
        try:
            score = float(row["agg_score"])
        except ValueError:
            bad.append(f"line {number}: agg_score {row['agg_score']!r} is not a number")
            continue
        if not 0 <= score <= 5:
            bad.append(f"line {number}: agg_score {score} is outside 0-5")
            continue
        rows.append(
            {
                "caption": _source_key(row["caption"]),
                "image": _source_key(row["image"]),
                "score": score,
                "is_positive": score >= 3.0,
                "is_positive_strict": score >= 4.0,
                "confidence": min(1.0, abs(score - 3.0) / 2.0 + 0.5),
                "note": row.get("sampling_method", ""),
            }
        )
        if len(bad) > 20:
            break
    if bad:
        raise ApplicationError("The CSV has rows that cannot be read.", extra={"errors": bad[:20]})
    return rows


def _parse_eccv_json(text: str) -> list[dict]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ApplicationError(f"The file is not valid JSON ({error.msg}, line {error.lineno}).") from None
    if not isinstance(data, dict) or not ({"i2t", "t2i"} & set(data)):
        raise ApplicationError('An ECCV Caption file is a JSON object with "i2t" and/or "t2i" mappings.')
    rows, seen = [], set()
    for direction in ("i2t", "t2i"):
        mapping = data.get(direction) or {}
        if not isinstance(mapping, dict):
            raise ApplicationError(f'"{direction}" must map source ids to lists of source ids.')
        for key, targets in mapping.items():
            if not isinstance(targets, list):
                raise ApplicationError(f'"{direction}"["{key}"] must be a list of source ids.')
            for target in targets:
                image, caption = (key, target) if direction == "i2t" else (target, key)
                pair = (_source_key(image), _source_key(caption))
                if pair in seen:
                    continue
                seen.add(pair)
                rows.append(
                    {
                        "image": pair[0],
                        "caption": pair[1],
                        "score": None,
                        "is_positive": True,
                        "is_positive_strict": False,
                        "confidence": 1.0,
                        "note": direction,
                    }
                )
    return rows


def labels_import_external(*, campaign: Campaign, content: bytes | str, fmt: str, source: str) -> dict:
    """Import an external label set as Labels with method `external` (one label per pair; a re-import
    replaces the earlier external label of the same pair).

    `fmt`: "cxc_csv" (caption,image,agg_score,sampling_method; positive at >= 3, strict at >= 4) or
    "eccv_json" ({"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}: every listed pair
    positive). Ids are the dataset's source ids. Pairs not yet in the campaign are added to it (kind
    image_caption, no HIT). Unknown ids are reported, not fatal, unless nothing matches. One transaction;
    idempotent (importing the same file twice leaves the same labels).
    """
    if isinstance(content, bytes):
        if len(content) > MAX_IMPORT_BYTES:
            raise ApplicationError(f"The file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB.")
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ApplicationError("The file is not UTF-8 text.") from None
    source = (source or "").strip()[:100] or fmt
    if fmt == "cxc_csv":
        rows = _parse_cxc_csv(content)
    elif fmt == "eccv_json":
        rows = _parse_eccv_json(content)
    else:
        raise ApplicationError("Choose the format: Crisscrossed Captions CSV or ECCV Caption JSON.")
    if not rows:
        raise ApplicationError("The file holds no labels.")
    images = dict(Image.objects.filter(dataset_id=campaign.dataset_id).values_list("source_id", "pk"))
    captions = dict(Caption.objects.filter(dataset_id=campaign.dataset_id).values_list("source_id", "pk"))
    caption_image = dict(Caption.objects.filter(dataset_id=campaign.dataset_id).values_list("pk", "image_id"))
    unknown, matched = [], []
    for row in rows:
        image_id, caption_id = images.get(row["image"]), captions.get(row["caption"])
        if image_id is None or caption_id is None:
            unknown.append(f"image {row['image']} / caption {row['caption']}")
            continue
        matched.append((image_id, caption_id, row))
    if not matched:
        raise ApplicationError(
            "None of the file's ids are in this campaign's dataset (use the dataset's source ids).",
            extra={"errors": unknown[:20]},
        )
    with transaction.atomic():
        existing = {
            (image_id, caption_id): pk
            for pk, image_id, caption_id in Pair.objects.filter(
                campaign=campaign, kind=PairKind.IMAGE_CAPTION
            ).values_list("pk", "image_id", "caption_id")
        }
        new_pairs = [
            Pair(
                campaign=campaign,
                kind=PairKind.IMAGE_CAPTION,
                image_id=image_id,
                caption_id=caption_id,
                is_original=caption_image.get(caption_id) == image_id,
                direction="ext",
            )
            for image_id, caption_id in {(i, c) for i, c, _ in matched} - set(existing)
        ]
        Pair.objects.bulk_create(new_pairs, batch_size=2000)
        if new_pairs:
            existing = {
                (image_id, caption_id): pk
                for pk, image_id, caption_id in Pair.objects.filter(
                    campaign=campaign, kind=PairKind.IMAGE_CAPTION
                ).values_list("pk", "image_id", "caption_id")
            }
        labels = {}
        for image_id, caption_id, row in matched:
            labels[existing[(image_id, caption_id)]] = Label(
                pair_id=existing[(image_id, caption_id)],
                method=AggregationMethod.EXTERNAL,
                choice="",
                score=row["score"],
                is_positive=row["is_positive"],
                is_positive_strict=row["is_positive_strict"],
                confidence=row["confidence"],
                answer_count=0,  # unknown: the set gives aggregates only
                source=source,
            )
        Label.objects.bulk_create(
            list(labels.values()),
            batch_size=2000,
            update_conflicts=True,
            unique_fields=["pair", "method"],
            update_fields=[
                "choice",
                "score",
                "is_positive",
                "is_positive_strict",
                "confidence",
                "answer_count",
                "source",
                "updated_at",
            ],
        )
    return {
        "rows": len(rows),
        "labels": len(labels),
        "positives": sum(1 for label in labels.values() if label.is_positive),
        "new_pairs": len(new_pairs),
        "unknown": len(unknown),
        "unknown_examples": unknown[:10],
    }
