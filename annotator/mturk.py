"""A small Amazon Mechanical Turk client: publish a campaign's HITs as ExternalQuestions, approve, reject.

The ExternalQuestion points at `<base_url>/mturk/`; MTurk adds assignmentId, hitId, workerId and
turkSubmitTo, and shows our page in an iframe (annotator/views/work.py `mturk_arrival`). Credentials come
from the usual AWS environment (boto3); `MTURK_SANDBOX` (default true) picks the sandbox endpoint.
Tests use botocore's Stubber: nothing here talks to AWS unless a real client is passed.
"""

import logging
from xml.sax.saxutils import escape

import boto3
from django.conf import settings
from django.db import transaction

from annotator.errors import ApplicationError
from annotator.models import Assignment, Campaign, CampaignStatus, Hit, HitStatus

logger = logging.getLogger(__name__)
SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
EXTERNAL_QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/'
    '2006-07-14/ExternalQuestion.xsd"><ExternalURL>{url}</ExternalURL><FrameHeight>{height}</FrameHeight>'
    "</ExternalQuestion>"
)


def mturk_client(*, sandbox: bool | None = None):
    """A boto3 `mturk` client for the sandbox (default, settings.MTURK_SANDBOX) or production."""
    if sandbox is None:
        sandbox = getattr(settings, "MTURK_SANDBOX", True)
    return boto3.client(
        "mturk", region_name="us-east-1", endpoint_url=SANDBOX_ENDPOINT if sandbox else PRODUCTION_ENDPOINT
    )


def external_question_xml(*, base_url: str, frame_height: int = 0) -> str:
    """The ExternalQuestion document for our arrival page (frame height 0 = MTurk sizes it to the window)."""
    if not base_url.startswith("https://"):
        raise ApplicationError("MTurk only frames https pages: give the site's https base URL.")
    return EXTERNAL_QUESTION.format(url=escape(base_url.rstrip("/") + "/mturk/"), height=int(frame_height))


def campaign_publish_to_mturk(
    *,
    campaign: Campaign,
    client,
    base_url: str,
    lifetime_days: int = 7,
    keywords: str = "image, caption, verification, labeling",
) -> list[str]:
    """Create one MTurk HIT per open Hit of a live campaign that has none yet; store its HITId.

    Idempotent: Hits that already have an external_hit_id are skipped, so a failure half-way can be
    retried. MaxAssignments is the HIT's assignments_required; the assignment duration is the lease.
    Each created HITId is saved in its own transaction, right after MTurk answers.
    """
    if campaign.status != CampaignStatus.LIVE:
        raise ApplicationError("Launch the campaign before publishing it on MTurk.", status=409)
    question = external_question_xml(base_url=base_url)
    created = []
    hits = Hit.objects.filter(campaign=campaign, status=HitStatus.OPEN, external_hit_id="").order_by("stage", "index")
    for hit in hits:
        response = client.create_hit(
            Title=f"Is the image correctly described? ({campaign.hit_size} items)"[:128],
            Description=(
                "Look at each image and its description and say whether the image is correctly described."
            ),
            Keywords=keywords,
            Reward=f"{campaign.reward_cents / 100:.2f}",
            MaxAssignments=hit.assignments_required,
            LifetimeInSeconds=int(lifetime_days * 24 * 3600),
            AssignmentDurationInSeconds=int(campaign.lease_minutes * 60),
            AutoApprovalDelayInSeconds=int(campaign.auto_approve_hours * 3600),
            Question=question,
            RequesterAnnotation=f"vericap campaign {campaign.pk} hit {hit.index}"[:255],
            UniqueRequestToken=f"vericap-{campaign.pk}-{hit.pk}"[:64],
        )
        hit_id = response["HIT"]["HITId"]
        with transaction.atomic():
            Hit.objects.filter(pk=hit.pk, external_hit_id="").update(external_hit_id=hit_id)
        created.append(hit_id)
    return created


def mturk_approve(*, assignment: Assignment, client, feedback: str = "") -> None:
    """Approve the MTurk assignment behind `assignment` (no-op for local workers)."""
    if not assignment.external_assignment_id:
        return
    kwargs = {"AssignmentId": assignment.external_assignment_id}
    if feedback:
        kwargs["RequesterFeedback"] = feedback[:1024]
    client.approve_assignment(**kwargs)


def mturk_reject(*, assignment: Assignment, client, feedback: str) -> None:
    """Reject the MTurk assignment behind `assignment`; MTurk requires feedback for the worker."""
    if not assignment.external_assignment_id:
        return
    if not feedback.strip():
        raise ApplicationError("MTurk requires a reason for a rejection.")
    client.reject_assignment(AssignmentId=assignment.external_assignment_id, RequesterFeedback=feedback[:1024])


def _decide_on_mturk(decide, *, assignment: Assignment, client, **kwargs) -> bool:
    """Run one MTurk decision; a failure is logged, never raised (the local decision already stands)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        decide(assignment=assignment, client=client or mturk_client(), **kwargs)
    except (BotoCoreError, ClientError, ApplicationError) as error:
        logger.warning("MTurk decision for assignment %s failed: %s", assignment.pk, error)
        return False
    return True


def assignment_approve_external(*, assignment: Assignment, client=None, feedback: str = "") -> bool:
    """The quality-control seam (annotator/services/quality.py calls it after commit): approve on MTurk."""
    return _decide_on_mturk(mturk_approve, assignment=assignment, client=client, feedback=feedback)


def assignment_reject_external(*, assignment: Assignment, reason: str, client=None) -> bool:
    """The quality-control seam: reject on MTurk with the requester's reason as the worker's feedback."""
    return _decide_on_mturk(mturk_reject, assignment=assignment, client=client,
                            feedback=reason or "The answers to the check questions were wrong.")
