"""manage.py simulate_crowd: rehearse the quality policy on a simulated crowd (annotator/simulation.py)."""

from django.core.management.base import BaseCommand, CommandError

from annotator.errors import ApplicationError
from annotator.simulation import SimulationConfig, simulate_crowd


class Command(BaseCommand):
    help = "Send simulated workers through the real services on a synthetic dataset and measure the policy."

    def add_arguments(self, parser):
        defaults = SimulationConfig()
        parser.add_argument("--images", type=int, default=defaults.images)
        parser.add_argument("--seed", type=int, default=defaults.seed)
        parser.add_argument("--workers", type=int, default=defaults.workers)
        parser.add_argument("--bad-share", type=float, default=defaults.bad_share)
        parser.add_argument(
            "--random-share", type=float, default=None, help="share of all workers (default: half the bad share)"
        )
        parser.add_argument(
            "--always-yes-share", type=float, default=None, help="share of all workers (default: the rest)"
        )
        parser.add_argument("--careful-error", type=float, default=defaults.careful_error)
        parser.add_argument("--redundancy", type=int, default=defaults.redundancy)
        parser.add_argument("--candidates-per-hit", type=int, default=defaults.candidates_per_hit)
        parser.add_argument("--qualification-items", type=int, default=defaults.qualification_items)
        parser.add_argument("--tolerated-gold-misses", type=int, default=defaults.tolerated_gold_misses)
        parser.add_argument("--extra-assignment-cap", type=int, default=defaults.extra_assignment_cap)
        parser.add_argument("--confidence-threshold", type=float, default=defaults.confidence_threshold)
        parser.add_argument("--gold-fail-action", choices=["review", "reject"], default=defaults.gold_fail_action)
        parser.add_argument("--review", choices=["reject", "inspect"], default=defaults.review)
        parser.add_argument("--ranking", choices=["auto", "tfidf", "proposal"], default=defaults.ranking)

    def handle(self, *args, **options):
        if options["images"] < 2 or options["workers"] < 1:
            raise CommandError("Use at least 2 images and 1 worker.")
        for name in ("bad_share", "careful_error"):
            if not 0 <= options[name] <= 1:
                raise CommandError(f"--{name.replace('_', '-')} is a share between 0 and 1.")
        fields = {k: v for k, v in options.items() if k in SimulationConfig.__dataclass_fields__}
        config = SimulationConfig(**fields)
        try:
            result = simulate_crowd(
                config, log=lambda line: self.stderr.write(line) if options["verbosity"] > 1 else None
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        self.stdout.write(result.as_text())
