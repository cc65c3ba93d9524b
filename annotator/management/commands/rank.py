"""`manage.py rank --dataset D --annotator A`: start a ranking run (in-process without a broker, else queued)."""

import json
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.models import Campaign, Dataset, MachineAnnotator, RankingRun, RunStatus
from annotator.quality.services.judging import judge_campaign_start
from annotator.ranking.selectors.ranking import ranking_run_progress
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.kinds import registrable_kinds
from annotator.ranking.services.reranking import rerank_run_start
from annotator.ranking.services.runs import ranking_run_start

FINISHED = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


class Command(BaseCommand):
    help = (
        "Rank dataset D with machine annotator A (top K in both directions). The annotator is registered "
        "when --kind is given (a built-in kind or an installed plugin's), or when A is itself a kind that needs "
        "no checkpoint (minilm_pivot, tfidf_pivot, visual, a plugin). Without a broker "
        "(the embedded default) the run executes here; with CELERY_BROKER_URL it is queued on the gpu queue."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="dataset name")
        parser.add_argument("--annotator", required=True, help="annotator name (registered if new)")
        parser.add_argument("--kind", choices=list(registrable_kinds()), help="kind of a new annotator")
        parser.add_argument(
            "--checkpoint",
            default="",
            help="clip, hf_dual, cross_encoder: a Hugging Face checkpoint directory; open_clip: the checkpoint file",
        )
        parser.add_argument(
            "--rerank",
            type=int,
            metavar="RUN",
            help="re-rank the top K of succeeded run RUN (of this dataset) with a cross_encoder or vlm_judge annotator",
        )
        parser.add_argument(
            "--judge",
            type=int,
            metavar="CAMPAIGN",
            help="score every image-caption pair of campaign CAMPAIGN (of this dataset) with a vlm_judge annotator",
        )
        parser.add_argument("--model", default="", help="open_clip: the model name, e.g. ViT-B-32")
        parser.add_argument("--config", default="", help="the annotator's config as a JSON object")
        parser.add_argument("--top-k", type=int, default=25, help="candidates per query and direction (default 25)")
        parser.add_argument("--wait", action="store_true", help="with a broker: wait and print progress until it ends")

    def handle(self, *args, dataset, annotator, kind, checkpoint, top_k, wait, model, config, rerank, judge, **options):
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            raise CommandError(f"No dataset named {dataset!r}.")
        config = self._config(config, model)
        try:
            registered = MachineAnnotator.objects.filter(name=annotator).first()
            if registered is None or kind or checkpoint:
                kind = kind or (registered.kind if registered else annotator)
                kinds = registrable_kinds()
                if kind not in kinds:
                    raise CommandError(f"No annotator named {annotator!r}; give --kind ({', '.join(kinds)}).")
                registered = annotator_register(name=annotator, kind=kind, checkpoint_path=checkpoint, config=config)
            model = registered
            started = time.monotonic()
            if judge is not None:
                campaign = Campaign.objects.filter(pk=judge, dataset=found).first()
                if campaign is None:
                    raise CommandError(f"No campaign {judge} on dataset {found.name}.")
                run = judge_campaign_start(campaign=campaign, annotator=model)
            elif rerank is not None:
                source = RankingRun.objects.filter(pk=rerank, dataset=found).first()
                if source is None:
                    raise CommandError(f"No ranking run {rerank} on dataset {found.name}.")
                run = rerank_run_start(source=source, annotator=model, top_k=top_k)
            else:
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

    @staticmethod
    def _config(text: str, model_name: str) -> dict | None:
        try:
            config = json.loads(text) if text else {}
        except ValueError as error:
            raise CommandError(f"--config is not JSON: {error}") from None
        if not isinstance(config, dict):
            raise CommandError("--config must be a JSON object.")
        if model_name:
            config["model"] = model_name
        return config or None

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
