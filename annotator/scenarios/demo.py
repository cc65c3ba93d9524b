"""What `manage.py demo_setup` does, step by step; each step is idempotent so `make demo` can run again."""

from django.core.management.base import OutputWrapper


def demo_setup(*, out: OutputWrapper) -> None:
    for step in (demo_users, demo_dataset, demo_ranking, demo_campaign):
        step(out=out)


DEMO_PASSWORD = "vericap-demo"
DEMO_ACCOUNTS = (("requester", "requester"), ("researcher", "researcher"), ("worker", "worker"))


def demo_users(*, out: OutputWrapper) -> None:
    """Create (or repair) the three demo logins, one per role, and print them; no superuser.

    Idempotent: an existing account keeps its row; its role and the demo password are set again.
    """
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotator.crowd.services.workers import worker_for_user
    from annotator.models import Profile, Role

    users = get_user_model().objects
    for username, role in DEMO_ACCOUNTS:
        with transaction.atomic():
            user, created = users.get_or_create(username=username, defaults={"email": f"{username}@example.org"})
            if created or not user.check_password(DEMO_PASSWORD):
                user.set_password(DEMO_PASSWORD)
                user.save(update_fields=["password"])
            Profile.objects.update_or_create(user=user, defaults={"role": Role(role)})
            if role == Role.WORKER:
                worker_for_user(user=user)
        out.write(f"login: {username} / {DEMO_PASSWORD} ({Role(role).label.lower()})")


def demo_dataset(*, out: OutputWrapper) -> None:
    """Import fixtures/demo (real photographs, five captions each) as the dataset `demo`.

    Idempotent through dataset_import: a second run finds every image and caption already there.
    """
    from pathlib import Path

    from django.conf import settings
    from django.contrib.auth import get_user_model

    from annotator.datasets.services.imports import dataset_import

    fixtures = Path(settings.BASE_DIR) / "fixtures" / "demo"
    owner = get_user_model().objects.filter(username="requester").first()
    dataset = dataset_import(
        name="demo", captions_path=fixtures / "captions.json", images_path=fixtures / "images", owner=owner
    )
    out.write(
        f"dataset: `demo` is {dataset.status}: {dataset.images.count()} images, "
        f"{dataset.captions.count()} captions ({dataset.report.get('images_created', 0)} images new)"
    )


def demo_ranking(*, out: OutputWrapper) -> None:
    """Owned by the machine-annotator issue: run minilm_pivot and tfidf_pivot over `demo`.

    Idempotent: an annotator with a succeeded run on `demo` is skipped. Without a broker (the embedded
    default) the runs execute here; with one they are queued on the gpu queue.
    """
    from annotator.models import Dataset, DatasetStatus, RankingRun, RunStatus
    from annotator.ranking.services.annotators import annotator_register
    from annotator.ranking.services.runs import ranking_run_start

    dataset = Dataset.objects.filter(name="demo", status=DatasetStatus.READY).first()
    if dataset is None:
        out.write("ranking: no ready dataset `demo`, skipped")
        return
    for kind in ("minilm_pivot", "tfidf_pivot"):
        annotator = annotator_register(name=kind, kind=kind)
        if RankingRun.objects.filter(dataset=dataset, annotator=annotator, status=RunStatus.SUCCEEDED).exists():
            out.write(f"ranking: {kind} already ranked `demo`")
            continue
        run = ranking_run_start(dataset=dataset, annotator=annotator, top_k=25)
        run.refresh_from_db()
        out.write(f"ranking: {kind} on `demo`: run {run.pk} {run.status} ({run.candidates.count()} candidates)")


DEMO_CAMPAIGN_NAME = "Demo: verify image-to-caption candidates"


def demo_campaign(*, out: OutputWrapper) -> None:
    """Owned by the campaign issue: build and launch a campaign on `demo` from its succeeded runs.

    Idempotent: the campaign is found by name and only moved forward (draft -> built -> live). The demo
    set is small (~12-20 images x 5 captions), so the campaign takes every image query, pools each run's
    top 5 (about 8-10 unique captions per image, i.e. several HITs of 16 + 1 + 1) and excludes gold
    negatives from a top that leaves enough captions free: with 25 for 75 captions and two runs, a
    random caption might otherwise have no room outside every top 25.
    """
    from django.contrib.auth import get_user_model

    from annotator.campaigns.services.build import campaign_build
    from annotator.campaigns.services.lifecycle import campaign_create, campaign_launch
    from annotator.core.errors import ApplicationError
    from annotator.models import CampaignStatus, Dataset, DatasetStatus, RankingRun, Role, RunStatus

    dataset = Dataset.objects.filter(name="demo", status=DatasetStatus.READY).first()
    if dataset is None:
        out.write("campaign: no ready dataset `demo`, skipped")
        return
    campaign = dataset.campaigns.filter(name=DEMO_CAMPAIGN_NAME).first()
    if campaign is None:
        runs = list(
            RankingRun.objects.filter(dataset=dataset, status=RunStatus.SUCCEEDED).order_by(
                "annotator__name", "-created_at"
            )
        )
        latest = {}
        for run in runs:  # the newest succeeded run of each annotator
            latest.setdefault(run.annotator_id, run)
        runs = list(latest.values())
        if not runs:
            out.write("campaign: `demo` has no succeeded ranking runs yet, skipped")
            return
        users = get_user_model().objects
        owner = (
            users.filter(username="requester").first()
            or users.filter(profile__role=Role.REQUESTER).order_by("pk").first()
            or dataset.owner
            or users.filter(is_superuser=True).order_by("pk").first()
        )
        if owner is None:
            out.write("campaign: no requester account to own the demo campaign, skipped")
            return
        captions = dataset.captions.count()
        per_image = max(1, captions // max(dataset.images.count(), 1))
        top_k = min(run.top_k for run in runs)
        exclusion = max(5, min(25, top_k, (captions - per_image) // (len(runs) + 1)))
        try:
            campaign = campaign_create(
                owner=owner,
                dataset=dataset,
                runs=runs,
                name=DEMO_CAMPAIGN_NAME,
                direction="i2t",
                pool_depth=min(5, top_k),
                gold_exclusion_depth=exclusion,
                seed=2021,
                reward_cents=140,
                lease_minutes=30,
            )
        except ApplicationError as error:
            out.write(f"campaign: could not create the demo campaign: {error.message}")
            return
    try:
        if campaign.status in (CampaignStatus.DRAFT, CampaignStatus.BUILT):
            campaign = campaign_build(campaign=campaign)
        if campaign.status == CampaignStatus.BUILT:
            campaign = campaign_launch(campaign=campaign)
    except ApplicationError as error:
        out.write(f"campaign: could not build the demo campaign: {error.message}")
        return
    stats = campaign.build_report.get("statistics", {})
    out.write(
        f"campaign: `{campaign.name}` is {campaign.status}: {stats.get('proposals')} proposals, "
        f"{stats.get('unique_pairs')} unique pairs, {stats.get('hits')} HITs of {campaign.hit_size} "
        f"(/campaigns/{campaign.pk}/)"
    )
