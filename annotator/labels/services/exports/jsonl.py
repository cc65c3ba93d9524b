"""JSONL: one line per labelled pair with its ids, provenance, label and every approved answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO

from annotator.campaigns.models.campaign import Hit, HitItem
from annotator.core.bulk import rows_stream
from annotator.crowd.models.crowd import Answer, Assignment, Worker
from annotator.labels.export_columns import IF_SET, LABEL, PAIR, VERDICT, jsonl_fields
from annotator.labels.services.exports.rows import (
    Follower,
    db_table,
    labelled_pairs,
    sources_stream,
)


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


def _answer(row: tuple) -> dict:
    _, pseudonym, choice, score, shortcomings, wrong_aspects, comment, seconds, _ = row
    return {
        "worker": pseudonym,
        "choice": choice or None,
        "score": score,
        "shortcomings": _json_list(shortcomings),
        "wrong_aspects": _json_list(wrong_aspects),
        "comment": comment,
        "seconds_spent": seconds,
    }


def _source(row: tuple) -> dict:
    _, name, annotator_kind, run, direction, rank, score = row
    return {
        "annotator": name,
        "annotator_kind": annotator_kind,
        "run": run,
        "direction": direction,
        "rank": rank,
        "score": score,
    }


def write_jsonl(*, out: IO[str], campaign_id: int, method: str, variant: str = "", merge_original: bool = False) -> int:
    """One line per labelled pair: ids, provenance, label, confidence and every approved answer. The pair's and
    the label's fields are the JSONL columns of `LABEL_COLUMNS`, each in its section."""
    pair_fields, verdict, label, other_side = (jsonl_fields(section) for section in (PAIR, VERDICT, LABEL, IF_SET))
    sources = Follower(sources_stream(campaign_id))
    answers = Follower(_answers_stream(campaign_id))
    count = 0
    for pair in labelled_pairs(campaign_id, method):
        record = {
            **pair_fields(pair),
            "provenance": [_source(row) for row in sources.take(pair.pair_id)],
            **verdict(pair),
            "label": label(pair),
            "answers": [_answer(row) for row in answers.take(pair.pair_id)],
            **other_side(pair),
        }
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count
