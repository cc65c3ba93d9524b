"""Reads for the crowd worker's pages: what a worker's browser may receive, and their own numbers.

Everything about HIT items goes through `hit_worker_items` (annotator/crowd/selectors/hits.py, the campaign
area): it is the one place that decides what a worker may see (an opaque token, image URLs, text), never
the pair id, the role (gold or not) or the provenance. Qualification items use `pair_display`, which
follows the same rule.
"""

from functools import cache

from django.core.cache import cache as shared_cache
from django.db import connection
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign, CampaignStatus, Hit, HitItem, Pair
from annotator.campaigns.models.gold import QualificationItem
from annotator.crowd.models.crowd import Answer, Assignment, AssignmentStatus, QualificationAttempt, Worker
from annotator.crowd.models.standing import WorkerStanding
from annotator.crowd.rows import (
    attach,
    fetch_all,
    fetch_one,
    ids_fit,
    instances,
    select_list,
    table,
)
from annotator.crowd.selectors.hits import hit_item_token, hit_worker_items


def _file_url(field) -> str:
    if not field:
        return ""
    try:
        return field.url
    except ValueError:
        return ""


def pair_display(*, pair: Pair) -> dict:
    """What a worker sees of a pair: image and thumbnail URLs and the text(s). Nothing else."""
    image, other_image = pair.image, pair.other_image
    return {
        "kind": pair.kind,
        "image_url": _file_url(image.file) if image else "",
        "thumbnail_url": (_file_url(image.thumbnail) or _file_url(image.file)) if image else "",
        "caption": pair.caption.text if pair.caption_id else "",
        "other_caption": pair.other_caption.text if pair.other_caption_id else "",
        "other_image_url": _file_url(other_image.file) if other_image else "",
        "other_thumbnail_url": (_file_url(other_image.thumbnail) or _file_url(other_image.file)) if other_image else "",
    }


HIT_ITEMS_CACHE_SECONDS = 300


def hit_items_for_worker(*, hit: Hit) -> list[dict]:
    """The HIT's items in position order, exactly as the worker's browser receives them."""
    return hit_worker_items(hit=hit)


def hit_items_for_leased_worker(*, hit: Hit) -> list[dict]:
    """hit_items_for_worker for a HIT a worker holds a lease on (its campaign was launched).

    Kept in the shared cache for a few minutes: a HIT page is loaded by every worker the HIT asks for
    (and again on each reload), and its items never change once the campaign is launched. The key holds
    the HIT's creation time (a reused id is never served another HIT's items); the time limit keeps
    signed storage URLs (S3 query-string auth) well inside their validity. Not for a draft's HITs, whose
    items a build may still be writing.
    """
    key = f"hit-worker-items:{hit.pk}:{hit.created_at.timestamp()}"
    items = shared_cache.get(key)
    if items is None:
        items = hit_worker_items(hit=hit)
        if items:  # a HIT being built has no items yet: never remember that
            shared_cache.set(key, items, HIT_ITEMS_CACHE_SECONDS)
    return items


_TOKEN_CACHE: dict[tuple[int, str], tuple[tuple[str, int], ...]] = {}
_TOKEN_CACHE_SIZE = 4096


def _hit_item_tokens_cached(hit_id: int, hit_created_at: str) -> tuple[tuple[str, int], ...]:
    key = (hit_id, hit_created_at)
    cached = _TOKEN_CACHE.get(key)
    if cached is None:
        item_ids = HitItem.objects.filter(hit_id=hit_id).order_by("position").values_list("pk", flat=True)
        cached = tuple((hit_item_token(hit_id=hit_id, item_id=item_id), item_id) for item_id in item_ids)
        if cached:  # a HIT being built has no items yet: never remember that
            if len(_TOKEN_CACHE) >= _TOKEN_CACHE_SIZE:
                _TOKEN_CACHE.clear()
            _TOKEN_CACHE[key] = cached
    return cached


def hit_item_tokens(*, hit: Hit) -> dict[str, int]:
    """token -> HitItem id, for resolving what the browser sends back. Server side only.

    Cached per process: the items of a HIT a worker can reach (a launched campaign) never change. The key
    includes the HIT's creation time, so a HIT id reused by another HIT (a rebuilt draft, a test database)
    is never served stale tokens.
    """
    return dict(_hit_item_tokens_cached(hit.pk, hit.created_at.isoformat()))


@cache
def _answers_sql(vendor: str) -> str:
    return f"SELECT {select_list(Answer, 'x')} FROM {table(Answer)} x WHERE x.assignment_id = %s"


def assignment_answer_rows(*, assignment_id: int) -> list[Answer]:
    """The assignment's stored answers. SQL text (`annotator.crowd.rows`): every HIT page and submit reads them."""
    return [instances(row, Answer)[0] for row in fetch_all(_answers_sql(connection.vendor), [assignment_id])]


def assignment_answers_for_worker(*, assignment: Assignment) -> dict[str, dict]:
    """The assignment's own saved answers keyed by item token (never anyone else's)."""
    rows = assignment_answer_rows(assignment_id=assignment.pk)
    if not rows:  # a HIT just claimed: no tokens to look up
        return {}
    item_to_token = {item_id: token for token, item_id in hit_item_tokens(hit=assignment.hit).items()}
    answers = {}
    for answer in rows:
        token = item_to_token.get(answer.item_id)
        if token is None:
            continue
        answers[token] = {
            "choice": answer.choice,
            "score": answer.score,
            "shortcomings": list(answer.shortcomings),
            "wrong_aspects": list(answer.wrong_aspects),
            "comment": answer.comment,
            "seconds_spent": answer.seconds_spent,
        }
    return answers


@cache
def _own_assignment_sql(vendor: str) -> str:
    return (
        f"SELECT {select_list(Assignment, 'a')}, {select_list(Hit, 'h')}, {select_list(Campaign, 'c')}"
        f" FROM {table(Assignment)} a JOIN {table(Hit)} h ON h.id = a.hit_id"
        f" JOIN {table(Campaign)} c ON c.id = h.campaign_id WHERE a.id = %s AND a.worker_id = %s"
    )


def assignment_for_worker(*, worker: Worker, assignment_id: int) -> Assignment | None:
    """The worker's own assignment with its HIT and campaign, or None (callers answer 404: another's
    assignment does not exist for them). SQL text (`annotator.crowd.rows`): every HIT page reads it."""
    if not ids_fit(assignment_id):
        return None
    row = fetch_one(_own_assignment_sql(connection.vendor), [assignment_id, worker.pk])
    if row is None:
        return None
    assignment, hit, campaign = instances(row, Assignment, Hit, Campaign)
    attach(hit, "campaign", campaign)
    attach(assignment, "hit", hit)
    attach(assignment, "worker", worker)
    return assignment


def worker_paused_by(*, worker: Worker) -> set[int]:
    """Ids of the requesters whose campaigns this worker may not take work on now (their block or soft
    block). The worker learns only that; never who decided it or why."""
    return set(
        WorkerStanding.objects.filter(worker=worker)
        .filter(Q(blocked=True) | Q(soft_blocked=True))
        .values_list("requester_id", flat=True)
    )


def worker_may_take_work(*, worker: Worker, campaign: Campaign) -> bool:
    """Neither blocked on the platform nor blocked or soft-blocked by the campaign's owner."""
    return not worker.blocked and campaign.owner_id not in worker_paused_by(worker=worker)


def campaigns_open_for_worker(*, worker: Worker) -> list[dict]:
    """Live campaigns with work left for this worker, with their qualification state and the worker's lease.
    Campaigns of a requester who blocked the worker are left out."""
    campaigns = (
        Campaign.objects.filter(status=CampaignStatus.LIVE)
        .exclude(owner_id__in=worker_paused_by(worker=worker))
        .order_by("-launched_at", "-id")
    )
    rows = []
    now = timezone.now()
    for campaign in campaigns:
        taken = Assignment.objects.filter(hit__campaign=campaign, worker=worker)
        lease = taken.filter(status=AssignmentStatus.RESERVED, expires_at__gt=now).first()
        open_hits = Hit.objects.filter(campaign=campaign, status="open").exclude(assignments__worker=worker).count()
        rows.append(
            {
                "campaign": campaign,
                "lease": lease,
                "open_hits": open_hits,
                "done": taken.exclude(
                    status__in=[AssignmentStatus.RESERVED, AssignmentStatus.RETURNED, AssignmentStatus.EXPIRED]
                ).count(),
                "qualification": qualification_state(campaign=campaign, worker=worker),
            }
        )
    return rows


def qualification_state(*, campaign: Campaign, worker: Worker) -> str:
    """'not_required', 'passed', 'in_progress', 'failed' (may retake later) or 'none'."""
    if not campaign_requires_qualification(campaign=campaign):
        return "not_required"
    attempts = QualificationAttempt.objects.filter(campaign=campaign, worker=worker)
    if attempts.filter(passed=True).exists():
        return "passed"
    last = attempts.order_by("-started_at", "-id").first()
    if last is None:
        return "none"
    if last.passed is None:
        return "in_progress"
    return "failed"


def campaign_requires_qualification(*, campaign: Campaign) -> bool:
    """A test is asked for when the campaign wants one and its qualification pool has items."""
    if campaign.qualification_items <= 0:
        return False
    return QualificationItem.objects.filter(campaign=campaign, withdrawn=False).exists()


def worker_is_qualified(*, campaign: Campaign, worker: Worker) -> bool:
    """Passed this campaign's test, or it has none ("passed" or "not_required" above).

    A passed attempt is looked up first: on every claim of a qualified worker that is the one query.
    """
    if QualificationAttempt.objects.filter(campaign=campaign, worker=worker, passed=True).exists():
        return True
    return not campaign_requires_qualification(campaign=campaign)


def worker_dashboard(*, worker: Worker) -> dict:
    """HITs done, pending, approved, rejected; earnings (approved x reward, in cents); approval rate."""
    counts = Assignment.objects.filter(worker=worker).aggregate(
        submitted=Count("pk", filter=Q(status=AssignmentStatus.SUBMITTED)),
        approved=Count("pk", filter=Q(status=AssignmentStatus.APPROVED)),
        rejected=Count("pk", filter=Q(status=AssignmentStatus.REJECTED)),
        reserved=Count("pk", filter=Q(status=AssignmentStatus.RESERVED)),
        earnings_cents=Sum("hit__campaign__reward_cents", filter=Q(status=AssignmentStatus.APPROVED)),
    )
    decided = counts["approved"] + counts["rejected"]
    return {
        "done": counts["submitted"] + decided,
        "pending": counts["submitted"],
        "approved": counts["approved"],
        "rejected": counts["rejected"],
        "in_progress": counts["reserved"],
        "earnings_cents": counts["earnings_cents"] or 0,
        "earnings": f"${(counts['earnings_cents'] or 0) / 100:.2f}",
        "approval_rate": (counts["approved"] / decided) if decided else None,
    }


def worker_recent_assignments(*, worker: Worker, limit: int = 20):
    return (
        Assignment.objects.filter(worker=worker).select_related("hit__campaign").order_by("-reserved_at", "-id")[:limit]
    )
