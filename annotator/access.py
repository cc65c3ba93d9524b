"""Who may see and change what: the one place that reads roles, the staff and superuser flags, ownership
and shares. Pages, selectors and the API ask here; none of them compares roles or flags itself (a test
reads the code to keep it so).

The rules:
- Operators (staff and superusers) act as requesters and see and manage everything.
- A requester manages their own datasets (and unowned ones, imported from the command line), the ranking
  runs on those, and their own campaigns with everything in them (HITs, assignments, reviews, exports).
- A researcher sees what a requester shared with them: the shared campaigns' labels, exports, evaluations
  and label sets, and the dataset behind each shared campaign with its ranking runs; besides that, only
  public label sets and what they made themselves (uploaded runs, their own label sets and evaluations).
  Nothing else: another requester's dataset names and run history stay out of sight.
- A worker sees only their own work; anonymous visitors see nothing here.

Out-of-scope objects are answered as missing (404), the same as ids that do not exist.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.models import (
    Campaign,
    Dataset,
    Evaluation,
    ExportJob,
    GalleryEnlargement,
    ImagePool,
    LabelSet,
    RankingRun,
    Refinement,
    Role,
    Worker,
)

READER_ROLES = frozenset({Role.REQUESTER, Role.RESEARCHER})


def user_role(user) -> str | None:
    """The user's role; operators act as requesters. None for anonymous users and users without a profile."""
    if user is None or not user.is_authenticated:
        return None
    if is_operator(user):
        return Role.REQUESTER
    profile = getattr(user, "profile", None)
    return profile.role if profile else None


def is_operator(user) -> bool:
    """Staff and superusers: they run the platform and see every tenant's work."""
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.is_superuser))


def has_role(user, *roles: str) -> bool:
    return user_role(user) in roles


def is_requester(user) -> bool:
    return user_role(user) == Role.REQUESTER


def is_researcher(user) -> bool:
    return user_role(user) == Role.RESEARCHER


def is_worker(user) -> bool:
    return user_role(user) == Role.WORKER


def is_reader(user) -> bool:
    """Requesters and researchers: the roles that read labels, exports, label sets and leaderboards."""
    return user_role(user) in READER_ROLES


# --- datasets and ranking runs ---------------------------------------------------------------------------


def datasets_managed_by(user) -> QuerySet[Dataset]:
    """Datasets `user` may import into and run machine annotators on: a requester's own and unowned ones."""
    if is_operator(user):
        return Dataset.objects.all()
    if not is_requester(user):
        return Dataset.objects.none()
    return Dataset.objects.filter(Q(owner__isnull=True) | Q(owner=user))


def can_manage_dataset(user, dataset: Dataset) -> bool:
    if is_operator(user):
        return True
    return is_requester(user) and dataset.owner_id in (None, user.pk)


def datasets_visible_to(user) -> QuerySet[Dataset]:
    """Datasets whose pages (images, ranking runs) `user` may open: the managed ones for a requester, the
    datasets of the campaigns shared with them for a researcher."""
    if is_operator(user) or is_requester(user):
        return datasets_managed_by(user)
    if not is_researcher(user):
        return Dataset.objects.none()
    return Dataset.objects.filter(pk__in=campaigns_visible_to(user).values("dataset_id"))


def runs_visible_to(user) -> QuerySet[RankingRun]:
    """Ranking runs on the datasets `user` may see, and the runs they started or uploaded themselves."""
    if is_operator(user):
        return RankingRun.objects.all()
    if not is_reader(user):
        return RankingRun.objects.none()
    return RankingRun.objects.filter(Q(dataset__in=datasets_visible_to(user).values("pk")) | Q(created_by=user))


def can_manage_run(user, run: RankingRun) -> bool:
    """Cancelling, retrying: the requester of the run's dataset."""
    return can_manage_dataset(user, run.dataset)


def refinements_managed_by(user) -> QuerySet[Refinement]:
    """Caption refinements on the datasets `user` manages (proposals, correction HITs, their review)."""
    return Refinement.objects.filter(dataset__in=datasets_managed_by(user).values("pk"))


def can_manage_refinement(user, refinement: Refinement) -> bool:
    return can_manage_dataset(user, refinement.dataset)


def can_read_caption_history(user, dataset: Dataset) -> bool:
    """A caption's versions are part of the dataset: whoever may open the dataset may read them."""
    return datasets_visible_to(user).filter(pk=dataset.pk).exists()


def pools_visible_to(user) -> QuerySet[ImagePool]:
    """Image pools of the datasets `user` may see."""
    return ImagePool.objects.filter(dataset__in=datasets_visible_to(user).values("pk"))


def can_manage_pool(user, pool: ImagePool) -> bool:
    """Importing, enlarging, adding: the requester of the pool's dataset."""
    return can_manage_dataset(user, pool.dataset)


def enlargements_visible_to(user) -> QuerySet[GalleryEnlargement]:
    return GalleryEnlargement.objects.filter(dataset__in=datasets_visible_to(user).values("pk"))


def can_manage_enlargement(user, enlargement: GalleryEnlargement) -> bool:
    return can_manage_dataset(user, enlargement.dataset)


# --- campaigns and what hangs off them -------------------------------------------------------------------


def campaigns_managed_by(user) -> QuerySet[Campaign]:
    """Campaigns `user` builds, launches and reviews: a requester's own (sharing never lets anyone else)."""
    if is_operator(user):
        return Campaign.objects.all()
    if not is_requester(user):
        return Campaign.objects.none()
    return Campaign.objects.filter(owner=user)


def can_manage_campaign(user, campaign: Campaign) -> bool:
    if is_operator(user):
        return True
    return is_requester(user) and campaign.owner_id == user.pk


def campaigns_visible_to(user) -> QuerySet[Campaign]:
    """Campaigns whose labels, metrics and exports `user` may read: their own and those shared with them."""
    if is_operator(user):
        return Campaign.objects.all()
    if not is_reader(user):
        return Campaign.objects.none()
    return Campaign.objects.filter(pk__in=Campaign.objects.filter(Q(owner=user) | Q(shared_with=user)).values("pk"))


def exports_visible_to(user) -> QuerySet[ExportJob]:
    """Exports of the campaigns `user` may read (a researcher sees the owner's exports too: same labels)."""
    return ExportJob.objects.filter(campaign__in=campaigns_visible_to(user).values("pk")).select_related("campaign")


def label_sets_visible_to(user) -> QuerySet[LabelSet]:
    """Public sets, one's own, those of readable campaigns, those on one's own datasets; all for operators."""
    sets = LabelSet.objects.select_related("dataset", "created_by", "campaign")
    if is_operator(user):
        return sets
    if not is_reader(user):
        return sets.none()
    visible = (
        Q(public=True)
        | Q(created_by=user)
        | Q(campaign__in=campaigns_visible_to(user).values("pk"))
        | Q(dataset__owner=user)
    )
    return sets.filter(pk__in=LabelSet.objects.filter(visible).values("pk"))


def evaluations_visible_to(user) -> QuerySet[Evaluation]:
    """Evaluations against labels `user` may read: a readable campaign's, or a readable label set's."""
    return Evaluation.objects.filter(
        Q(campaign__in=campaigns_visible_to(user).values("pk"))
        | Q(label_set__in=label_sets_visible_to(user).values("pk"))
    ).select_related("campaign")


def workers_known_to(user) -> QuerySet[Worker]:
    """Workers who did work on the campaigns `user` manages (operators: every worker)."""
    if is_operator(user):
        return Worker.objects.all()
    worked = Worker.objects.filter(assignments__hit__campaign__in=campaigns_managed_by(user).values("pk"))
    return Worker.objects.filter(pk__in=worked.values("pk"))


def template_context(request) -> dict:
    """Context processor: `user_role` for templates (the nav), from the same rule as everything here.

    Lazy, so a page that never shows the nav does not load the user for it."""
    from django.utils.functional import SimpleLazyObject

    user = getattr(request, "user", None)
    return {
        "user_role": SimpleLazyObject(lambda: user_role(user) or ""),
        "user_is_operator": SimpleLazyObject(lambda: is_operator(user)),
    }
