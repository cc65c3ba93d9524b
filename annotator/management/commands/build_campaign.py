"""manage.py build_campaign --dataset D --runs ID,ID --name N [options] [--launch]"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.errors import ApplicationError
from annotator.models import CampaignDirection, Dataset, RankingRun, Sampling, Scale
from annotator.selectors.campaigns import campaign_statistics
from annotator.selectors.gold_exposure import qualification_pool_summary
from annotator.services.campaigns.build import campaign_build
from annotator.services.campaigns.lifecycle import campaign_create, campaign_launch

INT_OPTIONS = (
    "sample_count",
    "seed",
    "pool_depth",
    "gold_exclusion_depth",
    "candidates_per_hit",
    "gold_positives_per_hit",
    "gold_negatives_per_hit",
    "gold_reuse_limit",
    "redundancy",
    "reward_cents",
    "lease_minutes",
    "max_hits_per_worker",
    "qualification_items",
    "qualification_pool_size",
)
FLOAT_OPTIONS = (
    "qualification_positive_share",
    "sample_fraction",
    "platform_fee_percent",
    "cocaption_share",
    "random_pair_share",
    "similarity_positive_at",
    "gold_light_share",
)


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
            default=Sampling.POOL,
            help="t2t/i2i: pool the runs' own top k, or cxc (other modality, co-captions, random pairs)",
        )
        parser.add_argument("--no-rationale-followups", action="store_true", help="do not ask why (four-choice)")
        for name in INT_OPTIONS:
            parser.add_argument("--" + name.replace("_", "-"), type=int, dest=name)
        for name in FLOAT_OPTIONS:
            parser.add_argument("--" + name.replace("_", "-"), type=float, dest=name)
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
        options = {name: opts[name] for name in (*INT_OPTIONS, *FLOAT_OPTIONS) if opts.get(name) is not None}
        intra = opts["direction"] in (CampaignDirection.T2T, CampaignDirection.I2I)
        scale = opts["scale"] or (Scale.SIMILARITY if intra else Scale.FOUR_CHOICE)
        options.update(direction=opts["direction"], scale=scale, name=opts["name"], sampling=opts["sampling"])
        if opts["direction"] == CampaignDirection.I2I:  # image pairs have no original pair to be gold
            options.setdefault("gold_positives_per_hit", 0)
        if opts["no_rationale_followups"]:
            options["rationale_followups"] = False
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
