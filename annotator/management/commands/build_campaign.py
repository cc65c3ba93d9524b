"""manage.py build_campaign --dataset D --runs ID,ID --name N [--preset cxc] [options] [--launch]"""

import json
from argparse import BooleanOptionalAction
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db.models import BooleanField, FloatField, IntegerField

from annotator.campaigns.selectors.campaigns import campaign_statistics
from annotator.campaigns.selectors.gold_exposure import qualification_pool_summary
from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
from annotator.campaigns.services.options import OPTION_FIELDS, OPTION_HELP
from annotator.campaigns.services.presets import PRESETS, preset_options
from annotator.core.errors import ApplicationError
from annotator.models import Campaign, CampaignDirection, Dataset, RankingRun, Sampling, Scale

# Flags written by hand: the required name, and the direction, scale and sampling whose defaults depend on
# each other (and "--no-rationale-followups", the one switch whose default is on, and "--query-list FILE").
# Every other option comes from OPTION_FIELDS with its model field's type, choices and help text (option_flags).
HAND_WRITTEN = {"name", "direction", "scale", "sampling", "rationale_followups", "query_list"}


def option_flags() -> list[tuple[str, dict]]:
    """(flag, argparse keywords) for every campaign option that is not HAND_WRITTEN."""
    flags = []
    for name in OPTION_FIELDS:
        if name in HAND_WRITTEN:
            continue
        field = Campaign._meta.get_field(name)
        keywords = {"dest": name, "help": OPTION_HELP.get(name) or str(field.help_text or field.verbose_name)}
        if isinstance(field, BooleanField):
            keywords["action"] = BooleanOptionalAction
        elif field.choices:
            keywords["choices"] = [value for value, _ in field.choices]
        elif isinstance(field, (IntegerField, FloatField)):
            keywords["type"] = int if isinstance(field, IntegerField) else float
        flags.append(("--" + name.replace("_", "-"), keywords))
    return flags


class Command(BaseCommand):
    help = "Create a campaign from finished ranking runs, build its HITs, print the numbers, optionally launch it."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="dataset name or id")
        parser.add_argument("--runs", required=True, help="comma-separated ranking run ids (succeeded)")
        parser.add_argument("--name", required=True)
        parser.add_argument("--owner", help="requester username (default: the dataset's owner)")
        parser.add_argument("--direction", choices=CampaignDirection.values, default=CampaignDirection.I2T)
        parser.add_argument(
            "--scale", choices=Scale.values, help="default: similarity for t2t and i2i, else four_choice"
        )
        parser.add_argument(
            "--sampling",
            choices=Sampling.values,
            default=None,
            help="pool the runs' own top k (default), or cxc: t2t/i2i through the other modality (co-captions, "
            "random pairs), image-caption through intramodal similarity (c2i_intrasim)",
        )
        parser.add_argument(
            "--preset",
            choices=sorted(PRESETS),
            help="cxc: Crisscrossed Captions' protocol (similarity scale, 5 ratings, mean label, CxC's threshold per "
            "task, no follow-ups, no qualification test unless --qualification-items); flags given here win.",
        )
        parser.add_argument("--no-rationale-followups", action="store_true", help="do not ask why (four-choice)")
        parser.add_argument(
            "--query-list",
            help='a JSON file {"i2t": [image ids], "t2i": [caption ids]} (source ids): exactly these queries per '
            "stage instead of a sample (a paper's own queries, re-run)",
        )
        for flag, keywords in option_flags():
            parser.add_argument(flag, **keywords)
        parser.add_argument("--launch", action="store_true", help="launch it once built")

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None and opts["dataset"].isdigit():
            dataset = Dataset.objects.filter(pk=int(opts["dataset"])).first()
        if dataset is None:
            raise CommandError(f"No dataset {opts['dataset']!r}.")
        try:
            run_ids = [int(x) for x in opts["runs"].split(",") if x.strip()]
        except ValueError:
            raise CommandError("--runs takes comma-separated run ids, e.g. --runs 3,4") from None
        runs = list(RankingRun.objects.filter(pk__in=run_ids))
        missing = sorted(set(run_ids) - {run.pk for run in runs})
        if missing:
            raise CommandError(f"No ranking runs with ids {missing}.")
        owner = self._owner(opts.get("owner"), dataset)
        options = {name: opts[name] for name in OPTION_FIELDS if name not in HAND_WRITTEN and opts[name] is not None}
        given = set(options) | {"direction", "name"}
        given |= {name for name in ("scale", "sampling") if opts[name]}
        intra = opts["direction"] in (CampaignDirection.T2T, CampaignDirection.I2I)
        scale = opts["scale"] or (Scale.SIMILARITY if intra else Scale.FOUR_CHOICE)
        sampling = opts["sampling"] or Sampling.POOL
        options.update(direction=opts["direction"], scale=scale, name=opts["name"], sampling=sampling)
        if opts["direction"] == CampaignDirection.I2I:  # image pairs have no original pair to be gold
            options.setdefault("gold_positives_per_hit", 0)
        if opts["no_rationale_followups"]:
            options["rationale_followups"] = False
            given.add("rationale_followups")
        if opts["query_list"]:
            options["query_list"] = self._query_list(opts["query_list"])
            given.add("query_list")
        try:
            options = preset_options(preset=opts["preset"], options=options, given=given)
        except ApplicationError as error:
            raise CommandError(error.message) from error
        try:
            campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, **options)
            campaign = campaign_build(campaign=campaign)
            if opts["launch"]:
                campaign = campaign_launch(campaign=campaign)
        except ApplicationError as error:
            raise CommandError(error.message) from error
        stats = campaign_statistics(campaign=campaign, include_progress=False)
        write = self.stdout.write
        write(f"Campaign {campaign.pk} {campaign.name!r} on {dataset.name}: {campaign.status}")
        for stage in campaign.build_report["stages"]:
            write(
                f"  stage {stage['direction']}: {stage['query_count']} queries, {stage['proposals']} proposals, "
                f"{stage['new_pairs']} new pairs, {stage['hits']} HITs"
            )
            if stage.get("sampling"):
                write("    sampled: " + ", ".join(f"{name or 'other'} {n}" for name, n in stage["sampling"].items()))
        write(f"  proposals {stats['proposals']}, unique pairs {stats['unique_pairs']}, HITs {stats['hits']}")
        write(
            f"  cost ${stats['cost']['total_cents'] / 100:.2f} (fee {stats['cost']['fee_percent']}%), "
            f"about {stats['duration']['hours']} h with {stats['duration']['active_workers']} workers"
        )
        pool = qualification_pool_summary(campaign=campaign)
        write(f"  qualification pool {pool['size']} pairs ({pool['positives']} positive, {pool['negatives']} negative)")
        if pool["warning"]:
            write(self.style.WARNING(f"  warning: {pool['warning']}"))
        write(f"  built in {campaign.build_report.get('build_seconds')} s")

    def _query_list(self, path: str) -> dict:
        try:
            listed = json.loads(Path(path).read_text())
        except OSError as error:
            raise CommandError(f"Cannot read the query list {path}: {error.strerror}") from None
        except json.JSONDecodeError as error:
            raise CommandError(f"The query list {path} is not JSON ({error.msg}).") from None
        if not isinstance(listed, dict):
            raise CommandError('The query list is a JSON object {"i2t": [ids], "t2i": [ids]}.')
        return listed

    def _owner(self, username, dataset):
        User = get_user_model()
        if username:
            owner = User.objects.filter(username=username).first()
            if owner is None:
                raise CommandError(f"No user {username!r}.")
            return owner
        if dataset.owner_id:
            return dataset.owner
        raise CommandError("The dataset has no owner; name the requester with --owner.")
