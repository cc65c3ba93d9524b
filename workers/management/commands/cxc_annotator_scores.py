"""`manage.py cxc_annotator_scores --label-set NAME --annotator KIND --out DIR [--table5]`: a machine
annotator's similarity of every rated pair of a Crisscrossed Captions label set, written as the scores files
`manage.py evaluate --cxc --scores FILE` reads (`sts_scores.csv`: caption1,caption2,score; `sis_scores.csv`;
`sits_scores.csv`), in CxC's id spellings; with --table5 also Table 5 of those scores on the set, as JSON.

`manage.py evaluate --cxc --label-set NAME --annotator KIND` computes the same scores (the same code,
workers.ranking.pair_similarity.labelset_cxc_annotator_scores) and stores Table 5 as an evaluation on the
set's leaderboard; this command keeps the files."""

import csv
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.analysis.cxc_table5 import TASK_COLUMNS
from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labelsets import labelset_find
from annotator.research.services.cxc_table5 import labelset_cxc_table5
from workers.ranking.pair_similarity import labelset_cxc_annotator_scores


class Command(BaseCommand):
    help = "A machine annotator's scores of a CxC label set's rated pairs (files for evaluate --cxc)."

    def add_arguments(self, parser):
        parser.add_argument("--label-set", required=True, help="the CxC label set (name, name@version or id)")
        parser.add_argument("--annotator", required=True, help="annotator kind: tfidf_pivot, minilm_pivot, clip, ...")
        parser.add_argument("--out", required=True, help="a folder for <task>_scores.csv")
        parser.add_argument("--table5", action="store_true", help="also print Table 5 of these scores on the set")
        parser.add_argument("--resamples", type=int, default=1000, help="with --table5: bootstrap samples")
        parser.add_argument("--seed", type=int, default=0, help="with --table5: the bootstrap's seed")

    def handle(self, *args, **options):
        try:
            label_set = labelset_find(reference=options["label_set"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        try:
            by_task = labelset_cxc_annotator_scores(label_set=label_set, kind=options["annotator"])
        except (ValueError, KeyError) as error:
            raise CommandError(str(error)) from None
        out = Path(options["out"])
        out.mkdir(parents=True, exist_ok=True)
        for task, task_scores in by_task.items():
            path = out / f"{task}_scores.csv"
            with path.open("w", newline="") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow([*TASK_COLUMNS[task], "score"])
                for (first, second), score in task_scores.items():
                    writer.writerow([first, second, repr(score)])
            self.stderr.write(f"{path}: {len(task_scores)} pairs scored by {options['annotator']}")
        if options["table5"]:
            try:
                table = labelset_cxc_table5(
                    label_set=label_set, scores=by_task, samples=options["resamples"], seed=options["seed"]
                )
            except ApplicationError as error:
                raise CommandError(error.message) from None
            self.stdout.write(json.dumps(table))
