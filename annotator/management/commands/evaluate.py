"""`manage.py evaluate (--label-set NAME | --campaign ID | --labels FILE) --rankings FILE [--full]`: retrieval
metrics as JSON.

`manage.py evaluate --cxc (--ratings FILE ... | --label-set NAME) --scores FILE ... [--resamples N] [--seed S]`:
Crisscrossed Captions' Table 5, the bootstrap Spearman's r of a model's similarity scores of the released
STS / SIS / SITS pairs against their ratings (annotator.analysis.cxc_table5), with its spread.

`manage.py evaluate --cxc --label-set NAME --annotator KIND [--model NAME] [--owner USER]`: the same with the
scores computed by one of Vericap's machine annotators (minilm_pivot, tfidf_pivot, visual, a plugin), stored
as an evaluation on the set's leaderboard (computed here on the embedded default; with a broker by a `gpu`
worker, which this command waits for).

Without --full: ECCV Caption's R@1/5/10, R-Precision and mAP@R per direction. With --full: every metric of
annotator.analysis.scorecard (IR recall, graded metrics, ranks, COCO 5K and 1K, PMRP, SR@k, NCS@k), each
with its bootstrap interval, and notes on any protocol left out.
"""

import json
import sys
import time
from pathlib import Path

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.analysis.metrics import evaluate
from annotator.analysis.scorecard import DIRECTIONS as ALL_DIRECTIONS
from annotator.analysis.scorecard import IMAGE_TEXT, Settings, scorecard
from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labelsets import labelset_find
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.models import Campaign, Dataset, EvaluationStatus, ExportVariant
from annotator.research.selectors.scorecards import (
    campaign_grades,
    dataset_test_set,
    labelset_grades,
    removed_caption_ids,
)
from annotator.research.services.cxc_table5 import (
    cxc_annotator_evaluation_request,
    cxc_annotator_kinds,
    cxc_ratings_read,
    cxc_scores_read,
    cxc_table5_evaluate,
    labelset_cxc_table5,
)
from annotator.research.services.evaluation import campaign_evaluate
from annotator.research.services.labelset_evaluation import labelset_evaluate
from annotator.research.services.targets import coverage_warnings

FINISHED = (EvaluationStatus.SUCCEEDED, EvaluationStatus.FAILED)


def _read(path: str, what: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise CommandError(f"Cannot read the {what} {path}: {error.strerror}") from None


class Command(BaseCommand):
    help = (
        "Score a model's rankings (ECCV JSON shape, lists best first) with R@1/5/10, R-Precision and mAP@R "
        "against a campaign's verified labels or an ECCV-style label file; queries are the label file's keys. "
        "--full adds every other metric (IR recall, graded, ranks, COCO 5K/1K, PMRP, SR@k, NCS@k) with intervals."
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group()
        source.add_argument(
            "--label-set", help="Evaluate against this label set (name, name@version or id) over exactly its queries."
        )
        source.add_argument("--campaign", type=int, help="Evaluate against this campaign's verified labels.")
        source.add_argument("--labels", help='A label file {"i2t": {id: [positive ids]}, "t2i": {...}}.')
        parser.add_argument("--rankings", help="The model's rankings file ('-' reads stdin).")
        parser.add_argument(
            "--cxc",
            action="store_true",
            help="CxC Table 5: the bootstrap Spearman's r of --scores against --ratings (or --label-set's ratings).",
        )
        parser.add_argument(
            "--ratings",
            action="append",
            default=[],
            help="With --cxc: a released CxC test file (sts_test.csv, sis_test.csv, sits_test.csv; repeat).",
        )
        parser.add_argument(
            "--scores",
            action="append",
            default=[],
            help="With --cxc: the model's scores of one task's pairs, CSV with the two id columns and score (repeat).",
        )
        parser.add_argument(
            "--annotator",
            metavar="KIND",
            help="With --cxc --label-set: compute the scores with this machine annotator instead of --scores "
            f"({', '.join(cxc_annotator_kinds())}); stored as an evaluation on the set's leaderboard.",
        )
        parser.add_argument(
            "--owner", help="With --annotator: who the stored evaluation belongs to (default: the set's creator)."
        )
        parser.add_argument("--format", choices=["json"], default="json")
        parser.add_argument(
            "--variant",
            choices=ExportVariant.values,
            default=ExportVariant.LENIENT,
            help="With --campaign: lenient (100%% YES + Partially YES) or strict (100%% YES).",
        )
        parser.add_argument("--method", default=None, help="With --campaign: the aggregation method of the labels.")
        parser.add_argument(
            "--full",
            action="store_true",
            help="Every metric with its bootstrap interval (IR recall, graded, ranks, COCO 5K/1K, PMRP, SR@k, NCS@k).",
        )
        parser.add_argument(
            "--dataset",
            default=None,
            help="With --label-set: the dataset, when the name is on several. With --labels --full: the dataset "
            "whose test set the COCO, PMRP and semantic protocols use.",
        )
        parser.add_argument(
            "--model",
            default="",
            help="With --label-set: the model's name (warns if it built the set); with --annotator: the "
            "evaluation's name (default: the kind).",
        )
        parser.add_argument(
            "--resamples", type=int, default=1000, help="With --full: bootstrap resamples (0: none); --cxc: samples."
        )
        parser.add_argument("--seed", type=int, default=0, help="With --full or --cxc: the bootstrap's seed.")
        parser.add_argument(
            "--pmrp-zeta",
            type=int,
            action="append",
            help="With --full: PMRP's zeta (repeat to average several, as Chun et al.); default 0 as ECCV Caption.",
        )
        parser.add_argument(
            "--pmrp-cap", type=int, default=50, help="With --full: R of PMRP is min(R, cap); 0: no cap."
        )
        parser.add_argument(
            "--semantic-m", type=int, help="With --full: SR@k's m (default: the query's number of original positives)."
        )
        parser.add_argument(
            "--semantic-exclude-original",
            action="store_true",
            help="With --full: leave each query's original pairs out of SR@k / NCS@k (seed 002's 'N' variant).",
        )
        parser.add_argument("--no-semantic", action="store_true", help="With --full: skip the CIDEr matrix.")
        parser.add_argument(
            "--semantic-metric",
            choices=["cider", "spice"],
            default="cider",
            help="With --full: the captioning metric of N (SPICE needs Java and Stanford CoreNLP 3.6.0's models).",
        )

    def handle(self, *args, **options):
        if options["cxc"]:
            return self._cxc(options)
        if not (options["label_set"] or options["campaign"] or options["labels"]):
            raise CommandError("Give one of --label-set, --campaign or --labels (or --cxc).")
        if not options["rankings"]:
            raise CommandError("Give the model's rankings: --rankings FILE.")
        if options["label_set"] and not options["full"]:
            return self._label_set(options)
        try:
            directions = ALL_DIRECTIONS if options["full"] else ("i2t", "t2i")
            rankings = rankings_read(raw=_read(options["rankings"], "rankings file"), directions=directions)
            if options["full"]:
                self.stdout.write(json.dumps(self._full(rankings, options)))
                return
            if options["labels"]:
                labels = rankings_read(
                    raw=_read(options["labels"], "label file"),
                    what="label file",
                    directions=IMAGE_TEXT,
                    negatives_allowed=True,
                )
                results, counts = evaluate(rankings, labels)
            else:
                campaign = self._campaign(options)
                outcome = campaign_evaluate(
                    campaign=campaign, rankings=rankings, method=options["method"], variant=options["variant"]
                )
                results, counts = outcome["verified"], outcome["counts"]
        except ApplicationError as error:
            raise CommandError(error.message) from None
        for direction, count in counts.items():
            if count["missing_rankings"]:
                self.stderr.write(
                    f"{direction}: {count['missing_rankings']} of {count['queries']} queries have no ranking "
                    "(scored as misses)"
                )
            if not count["queries"]:
                self.stderr.write(f"{direction}: no query with positives; its scores are null")
        self.stdout.write(json.dumps(results))

    def _cxc(self, options):
        """CxC Table 5 as JSON on stdout; notes (tasks left out, pairs without a score) on stderr."""
        if options["campaign"] or options["labels"] or options["rankings"]:
            raise CommandError("--cxc takes --ratings or --label-set, and --scores (not rankings).")
        if options["annotator"]:
            return self._cxc_annotator(options)
        if bool(options["ratings"]) == bool(options["label_set"]):
            raise CommandError(
                "With --cxc give the released ratings (--ratings FILE, repeat) or --label-set, not both."
            )
        if not options["scores"]:
            raise CommandError("With --cxc give the model's scores (--scores FILE, repeat) or --annotator KIND.")
        try:
            scores = cxc_scores_read([(path, _read(path, "scores file")) for path in options["scores"]])
            if options["label_set"]:
                result = labelset_cxc_table5(
                    label_set=self._find_label_set(options),
                    scores=scores,
                    samples=options["resamples"],
                    seed=options["seed"],
                )
            else:
                ratings = cxc_ratings_read([(path, _read(path, "ratings file")) for path in options["ratings"]])
                result = cxc_table5_evaluate(
                    ratings=ratings, scores=scores, samples=options["resamples"], seed=options["seed"]
                )
        except ApplicationError as error:
            raise CommandError(error.message) from None
        for note in result["notes"] + [entry["note"] for entry in result["tasks"].values() if "note" in entry]:
            self.stderr.write(note)
        self.stdout.write(json.dumps(result))

    def _cxc_annotator(self, options):
        """Table 5 of an annotator's scores, stored as an evaluation of the label set; its table on stdout."""
        if options["scores"]:
            raise CommandError("--annotator computes the scores: give it or --scores, not both.")
        if options["ratings"] or not options["label_set"]:
            raise CommandError(
                "--annotator scores a label set's rated pairs (the annotator reads the set's dataset): give "
                "--label-set NAME, a set imported from the released files (manage.py labelset import sts_test.csv "
                "--dataset D --name cxc-sts)."
            )
        try:
            label_set = self._find_label_set(options)
            evaluation, created = cxc_annotator_evaluation_request(
                label_set=label_set,
                user=self._owner(options, label_set),
                kind=options["annotator"],
                name=options["model"],
                samples=options["resamples"],
                seed=options["seed"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from None
        if not created:
            self.stderr.write(f"Evaluation {evaluation.pk} ({evaluation.name}) was asked for before; its result:")
        evaluation = self._wait(evaluation)
        if evaluation.status not in FINISHED:  # another process computes it
            self.stderr.write(
                f"Evaluation {evaluation.pk} is {evaluation.status}; follow it at /api/v1/evaluations/{evaluation.pk}/ "
                f"or on /research/labelsets/{label_set.pk}/."
            )
            self.stdout.write(json.dumps({"evaluation": evaluation.pk, "status": evaluation.status}))
            return
        if evaluation.status != EvaluationStatus.SUCCEEDED:
            raise CommandError(f"Evaluation {evaluation.pk} failed: {evaluation.error}")
        table = evaluation.results["cxc"]
        for note in table["notes"] + [entry["note"] for entry in table["tasks"].values() if "note" in entry]:
            self.stderr.write(note)
        self.stdout.write(json.dumps({"evaluation": evaluation.pk, **table}))

    def _owner(self, options, label_set):
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"No user {options['owner']!r}.")
            return owner
        if label_set.created_by_id:
            return label_set.created_by
        raise CommandError(f"Label set {label_set.label} has no creator; name the evaluation's owner with --owner.")

    def _wait(self, evaluation):
        """The evaluation, finished when it ran here at commit (the embedded default); with a broker polled
        while a worker computes it (Ctrl-C leaves it queued; the set's page and the API follow it)."""
        if django_settings.CELERY_TASK_ALWAYS_EAGER:
            evaluation.refresh_from_db()
            return evaluation
        last = None
        while evaluation.status not in FINISHED:
            if evaluation.status != last:
                self.stderr.write(f"Evaluation {evaluation.pk} is {evaluation.status} ...")
                last = evaluation.status
            time.sleep(2)
            evaluation.refresh_from_db()
        return evaluation

    def _label_set(self, options):
        """Scores over the set's judged queries (every direction it has), warnings on stderr."""
        try:
            label_set = self._find_label_set(options)
            rankings = rankings_read(raw=_read(options["rankings"], "rankings file"))
            outcome = labelset_evaluate(label_set=label_set, rankings=rankings, model_name=options["model"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        for warning in outcome["warnings"]:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(json.dumps(outcome["scores"]))

    def _dataset(self, options) -> Dataset | None:
        if not options["dataset"]:
            return None
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"There is no dataset {options['dataset']!r}.")
        return dataset

    def _find_label_set(self, options):
        return labelset_find(reference=options["label_set"], dataset=self._dataset(options))

    def _campaign(self, options) -> Campaign:
        campaign = Campaign.objects.filter(pk=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"There is no campaign {options['campaign']}.")
        return campaign

    def _full(self, rankings: dict, options) -> dict:
        settings = Settings(
            resamples=options["resamples"],
            seed=options["seed"],
            pmrp_zetas=tuple(options["pmrp_zeta"] or (0,)),
            pmrp_cap=options["pmrp_cap"] or None,
            semantic_m=options["semantic_m"],
            semantic_exclude_original=options["semantic_exclude_original"],
        )
        warnings: list[str] = []
        if options["label_set"]:
            label_set = self._find_label_set(options)
            judgements = labelset_grades(label_set=label_set)
            dataset, removed = label_set.dataset, set()
            warnings = labelset_evaluate(label_set=label_set, rankings=rankings, model_name=options["model"])[
                "warnings"
            ]
        elif options["labels"]:
            judgements = rankings_read(
                raw=_read(options["labels"], "label file"), what="label file", negatives_allowed=True
            )
            dataset, removed = self._dataset(options), set()
        else:
            campaign = self._campaign(options)
            outcome = campaign_evaluate(
                campaign=campaign, rankings=rankings, method=options["method"], variant=options["variant"]
            )
            judgements = campaign_grades(campaign=campaign, method=outcome["method"], label_map=outcome["labels"])
            dataset, removed = campaign.dataset, removed_caption_ids(campaign=campaign)
        test_set, notes = None, []
        if dataset is not None:
            test_set, notes = dataset_test_set(
                dataset=dataset,
                removed=removed,
                semantic=not options["no_semantic"],
                semantic_metric=options["semantic_metric"],
            )
            if options["no_semantic"]:
                notes.append("SR@k and NCS@k: left out (--no-semantic).")
        card = scorecard(rankings, judgements, test_set=test_set, settings=settings)
        card["notes"] = notes + card["notes"]
        if test_set is not None:
            warnings += coverage_warnings(rankings=rankings, labels=judgements, test_set=test_set)
        card["warnings"] = [warning for warning in warnings if warning not in card["notes"]]
        for note in card["notes"] + card["warnings"]:
            self.stderr.write(note)
        card["settings"] = settings.as_json()
        return card
