"""manage.py simulate_crowd: rehearse the quality policy on a simulated crowd (annotator/scenarios/simulation.py).

`--campaign ID` drives the simulated crowd on an existing built or live campaign instead, of any scale
(annotator/scenarios/existing_campaign.py), and aggregates its labels.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.models import Campaign
from annotator.scenarios.existing_campaign import simulate_on_campaign
from annotator.scenarios.simulation import (
    ALL_BAD_KINDS,
    RANKING_ANNOTATORS,
    VARIANTS,
    SimulationConfig,
    simulate_variants,
    variants_table,
)


class Command(BaseCommand):
    help = (
        "Send simulated workers through the real services on a synthetic dataset and measure the policy; "
        "with several --variants, side by side."
    )

    def add_arguments(self, parser):
        defaults = SimulationConfig()
        parser.add_argument(
            "--campaign",
            type=int,
            default=None,
            help="an existing built or live campaign (any scale): the crowd answers its HITs, its labels are "
            "aggregated; --workers, --careful-accuracy, --seed and --noise apply",
        )
        parser.add_argument("--noise", type=float, default=0.5, help="with --campaign on a 0-5 campaign: rating noise")
        parser.add_argument("--images", type=int, default=defaults.images)
        parser.add_argument("--seed", type=int, default=defaults.seed)
        parser.add_argument(
            "--workers", type=int, default=0, help="0 (default): enough for the campaign to finish within the cap"
        )
        parser.add_argument("--bad-share", type=float, default=defaults.bad_share)
        parser.add_argument(
            "--bad-kinds",
            default=",".join(defaults.bad_kinds),
            help=f"the bad share's kinds, in turn (of {', '.join(ALL_BAD_KINDS)})",
        )
        parser.add_argument(
            "--random-share", type=float, default=None, help="share of all workers (only random and always-yes then)"
        )
        parser.add_argument("--always-yes-share", type=float, default=None, help="share of all workers")
        parser.add_argument("--careful-accuracy", type=float, default=defaults.careful_accuracy)
        parser.add_argument("--careful-spread", type=float, default=defaults.careful_spread)
        parser.add_argument("--careful-error", type=float, default=None, help="legacy: every careful worker's error")
        parser.add_argument(
            "--test-accuracy",
            type=float,
            default=None,
            help="careful workers' accuracy on the qualification test (default: as at work)",
        )
        parser.add_argument(
            "--middle-share",
            type=float,
            default=defaults.middle_share,
            help="share of careful answers that are a middle answer (Partially YES / Mostly NO)",
        )
        parser.add_argument(
            "--rank-difficulty",
            type=float,
            default=defaults.rank_difficulty,
            help="careful workers' extra error on negatives ranked first (halving with each rank)",
        )
        parser.add_argument(
            "--hits-per-worker", type=int, default=defaults.hits_per_worker, help="0: no cap (default 3)"
        )
        parser.add_argument(
            "--variants",
            default="defaults",
            help=f"comma-separated policies to compare: {', '.join(VARIANTS)} (e.g. fixed,adaptive,assisted)",
        )
        parser.add_argument("--redundancy", type=int, default=None, help="default: the variant's")
        parser.add_argument("--candidates-per-hit", type=int, default=defaults.candidates_per_hit)
        parser.add_argument(
            "--qualification-items", type=int, default=defaults.qualification_items, help="-1: the campaign default"
        )
        parser.add_argument("--tolerated-gold-misses", type=int, default=None, help="default: the campaign's")
        parser.add_argument("--extra-assignment-cap", type=int, default=None)
        parser.add_argument("--confidence-threshold", type=float, default=None)
        parser.add_argument("--gold-fail-action", choices=["review", "reject"], default=defaults.gold_fail_action)
        parser.add_argument("--review", choices=["reject", "inspect"], default=defaults.review)
        parser.add_argument("--ranking", choices=["auto", "tfidf", "proposal"], default=defaults.ranking)
        parser.add_argument(
            "--annotators",
            default=",".join(defaults.annotators),
            help="offline annotators whose runs the campaign pools: tfidf_pivot, minilm_pivot (comma-separated)",
        )

    def handle(self, *args, **options):
        if options["campaign"] is not None:
            return self._on_campaign(options)
        if options["images"] < 2 or options["workers"] < 0:
            raise CommandError("Use at least 2 images and 1 worker (0: as many as the campaign needs).")
        for name in ("bad_share", "careful_accuracy", "test_accuracy", "middle_share", "rank_difficulty"):
            if options[name] is None:
                continue
            if not 0 <= options[name] <= 1:
                raise CommandError(f"--{name.replace('_', '-')} is a share between 0 and 1.")
        kinds = tuple(k.strip() for k in options.pop("bad_kinds").split(",") if k.strip())
        unknown = [k for k in kinds if k not in ALL_BAD_KINDS]
        if unknown or not kinds:
            raise CommandError(f"--bad-kinds takes some of {', '.join(ALL_BAD_KINDS)}.")
        options["annotators"] = tuple(a.strip() for a in options["annotators"].split(",") if a.strip())
        if not options["annotators"] or any(a not in RANKING_ANNOTATORS for a in options["annotators"]):
            raise CommandError(f"--annotators takes some of {', '.join(RANKING_ANNOTATORS)}.")
        variants = [v.strip() for v in options.pop("variants").split(",") if v.strip()]
        if not variants or any(v not in VARIANTS for v in variants):
            raise CommandError(f"--variants takes some of {', '.join(VARIANTS)}.")
        if options["hits_per_worker"] == 0:
            options["hits_per_worker"] = None
        if options["workers"] == 0:
            options["workers"] = None
        if options["qualification_items"] < 0:
            options["qualification_items"] = None
        fields = {k: v for k, v in options.items() if k in SimulationConfig.__dataclass_fields__}
        config = SimulationConfig(bad_kinds=kinds, **fields)
        try:
            results = simulate_variants(
                config, variants, log=lambda line: self.stderr.write(line) if options["verbosity"] > 1 else None
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        for result in results:
            self.stdout.write(f"== {result.metrics['variant']}")
            self.stdout.write(result.as_text())
        if len(results) > 1:
            self.stdout.write("== side by side")
            self.stdout.write(variants_table(results))

    def _on_campaign(self, options):
        campaign = Campaign.objects.filter(pk=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"There is no campaign {options['campaign']}.")
        if not 0 <= options["careful_accuracy"] <= 1:
            raise CommandError("--careful-accuracy is a share between 0 and 1.")
        try:
            done = simulate_on_campaign(
                campaign=campaign,
                workers=options["workers"] or None,
                accuracy=options["careful_accuracy"],
                noise=options["noise"],
                seed=options["seed"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        self.stdout.write(json.dumps(done, default=str))
