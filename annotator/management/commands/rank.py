"""`manage.py rank --dataset D --annotator A`: start a ranking run (in-process without a broker, else queued)."""

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotator.errors import ApplicationError
from annotator.models import Dataset, MachineAnnotator, RankingRun, RunStatus
from annotator.selectors.ranking import ranking_run_progress
from annotator.services.ranking.annotators import RANKABLE_KINDS, annotator_register
from annotator.services.ranking.runs import ranking_run_start

FINISHED = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


class Command(BaseCommand):
    help = (
        "Rank dataset D with machine annotator A (top K in both directions). The annotator is registered "
        "when --kind is given (or A is itself a built-in kind: minilm_pivot, tfidf_pivot). Without a broker "
        "(the embedded default) the run executes here; with CELERY_BROKER_URL it is queued on the gpu queue."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="dataset name")
        parser.add_argument("--annotator", required=True, help="annotator name (registered if new)")
        parser.add_argument("--kind", choices=list(RANKABLE_KINDS), help="kind of a new annotator")
        parser.add_argument("--checkpoint", default="", help="Hugging Face CLIP directory (kind clip)")
        parser.add_argument("--top-k", type=int, default=25, help="candidates per query and direction (default 25)")
        parser.add_argument("--wait", action="store_true", help="with a broker: wait and print progress until it ends")

    def handle(self, *args, dataset, annotator, kind, checkpoint, top_k, wait, **options):
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            raise CommandError(f"No dataset named {dataset!r}.")
        try:
            model = MachineAnnotator.objects.filter(name=annotator).first()
            if model is None or kind or checkpoint:
                kind = kind or (model.kind if model else annotator)
                if kind not in RANKABLE_KINDS:
                    raise CommandError(f"No annotator named {annotator!r}; give --kind ({', '.join(RANKABLE_KINDS)}).")
                model = annotator_register(name=annotator, kind=kind, checkpoint_path=checkpoint)
            started = time.monotonic()
            run = ranking_run_start(dataset=found, annotator=model, top_k=top_k)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        run.refresh_from_db()
        if run.status not in FINISHED:
            if settings.CELERY_TASK_ALWAYS_EAGER or not wait:  # eager: an earlier run of the same kind is active
                self.stdout.write(f"Run {run.pk} is {run.status}; follow it at /ranking/runs/{run.pk}/.")
                return
            run = self._wait(run)
        progress = ranking_run_progress(run=run)
        rows = run.candidates.count()
        line = (
            f"Run {run.pk} ({model.name} on {found.name}) {run.status} in {time.monotonic() - started:.1f} s "
            f"on {run.device or '?'}: {rows} candidates, {progress['chunks_done']}/{progress['chunks_total']} chunks."
        )
        if run.status == RunStatus.SUCCEEDED:
            self.stdout.write(self.style.SUCCESS(line))
        else:
            raise CommandError(f"{line} {run.error}".strip())

    def _wait(self, run: RankingRun) -> RankingRun:
        last = None
        while run.status not in FINISHED:
            time.sleep(2)
            run.refresh_from_db()
            progress = ranking_run_progress(run=run)
            text = f"{run.status} {progress['percent']}% eta {progress['eta_seconds']} s"
            if text != last:
                self.stdout.write(text)
                last = text
        return run
