"""JSONL: one line per labelled pair with its ids, provenance, label and every approved answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO

from annotator.bulk import rows_stream
from annotator.models import Answer, Assignment, Hit, HitItem, Worker
from annotator.services.exports.rows import Follower, db_table, labelled_pairs, sources_stream


def _answers_stream(campaign_id: int) -> Iterator[tuple]:
    """Answers of approved assignments only, by pair."""
    sql = (
        "SELECT hi.pair_id, w.pseudonym, an.choice, an.score, an.shortcomings, an.wrong_aspects, an.comment, "
        "an.seconds_spent, asg.id "
        f"FROM {db_table(Answer)} an JOIN {db_table(Assignment)} asg ON asg.id = an.assignment_id "
        f"JOIN {db_table(Worker)} w ON w.id = asg.worker_id JOIN {db_table(HitItem)} hi ON hi.id = an.item_id "
        f"JOIN {db_table(Hit)} h ON h.id = hi.hit_id "
        "WHERE h.campaign_id = %s AND asg.status = 'approved' ORDER BY hi.pair_id, asg.id"
    )
    return rows_stream(sql, [campaign_id])


def _json_list(value) -> list:
    if value is None or value == "":
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


def write_jsonl(*, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False) -> int:
    """One line per labelled pair: ids, provenance, label, confidence and every approved answer."""
    sources = Follower(sources_stream(campaign_id))
    answers = Follower(_answers_stream(campaign_id))
    count = 0
    for pair in labelled_pairs(campaign_id, method):
        record = {
            "pair_id": pair.pair_id,
            "kind": pair.kind,
            "image": pair.image,
            "caption": pair.caption,
            "is_original": bool(pair.is_original),
            "stage": pair.direction,
            "provenance": [
                {
                    "annotator": name,
                    "annotator_kind": annotator_kind,
                    "run": run,
                    "direction": src_direction,
                    "rank": rank,
                    "score": src_score,
                }
                for _, name, annotator_kind, run, src_direction, rank, src_score in sources.take(pair.pair_id)
            ],
            "verified": "positive" if pair.is_positive else "negative",
            "label": {
                "method": pair.method,
                "choice": pair.choice or None,
                "score": pair.score,
                "is_positive": bool(pair.is_positive),
                "is_positive_strict": bool(pair.is_positive_strict),
                "confidence": pair.confidence,
                "answer_count": pair.answer_count,
                "probability": pair.probability,
                "interval_90": None if pair.probability_low is None else [pair.probability_low, pair.probability_high],
                "score_interval_90": None if pair.score_low is None else [pair.score_low, pair.score_high],
            },
            "answers": [
                {
                    "worker": pseudonym,
                    "choice": a_choice or None,
                    "score": a_score,
                    "shortcomings": _json_list(shortcomings),
                    "wrong_aspects": _json_list(wrong_aspects),
                    "comment": comment,
                    "seconds_spent": seconds,
                }
                for _, pseudonym, a_choice, a_score, shortcomings, wrong_aspects, comment, seconds, _ in answers.take(
                    pair.pair_id
                )
            ],
        }
        if pair.other_image is not None:
            record["other_image"] = pair.other_image
        if pair.other_caption is not None:
            record["other_caption"] = pair.other_caption
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count
