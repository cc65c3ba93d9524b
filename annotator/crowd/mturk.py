"""A small Amazon Mechanical Turk client: publish a campaign's HITs as ExternalQuestions, approve, reject.

The ExternalQuestion points at `<base_url>/mturk/`; MTurk adds assignmentId, hitId, workerId and
turkSubmitTo, and shows our page in an iframe (annotator/crowd/views/work.py `mturk_arrival`), which checks them
with `mturk_arrival_verify` when settings.MTURK_VERIFY_ARRIVALS is on. Credentials come from the usual AWS
environment (boto3); `MTURK_SANDBOX` (default true) picks the sandbox endpoint.
Tests use botocore's Stubber: nothing here talks to AWS unless a real client is passed.
"""

import logging
import re
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from django.conf import settings
from django.db import transaction

from annotator.campaigns.models.campaign import Campaign, CampaignStatus, Hit, HitStatus
from annotator.core.errors import ApplicationError
from annotator.crowd.models.crowd import Assignment

logger = logging.getLogger(__name__)
SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
EXTERNAL_QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/'
    '2006-07-14/ExternalQuestion.xsd"><ExternalURL>{url}</ExternalURL><FrameHeight>{height}</FrameHeight>'
    "</ExternalQuestion>"
)
# A worker waits in MTurk's iframe while we ask: fail fast (then 503, "try again") instead of boto3's
# default minute-long timeouts and five attempts.
ARRIVAL_CLIENT_CONFIG = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2, "mode": "standard"})
# Approvals and rejections are sent by a Celery task that retries with backoff and counts every attempt:
# one attempt is one call, so botocore does not retry behind its back.
DECISION_CLIENT_CONFIG = Config(connect_timeout=10, read_timeout=30, retries={"max_attempts": 1, "mode": "standard"})
ASSIGNMENT_ID_PATTERN = re.compile(r"^[A-Z0-9]{1,64}$")  # MTurk's EntityId
# GetAssignment describes an assignment only once the worker submitted it; for one that is accepted (or
# returned) it answers RequestError with this message.
NOT_SUBMITTED_MESSAGE = "This operation can be called with a status of"
ASSIGNMENT_ACCEPTED = "Accepted"  # our name for that state: MTurk's AssignmentStatus has no value for it
ASSIGNMENT_FINISHED = ("Submitted", "Approved", "Rejected")
ARRIVAL_REFUSED = "MTurk does not confirm this assignment for this worker and HIT, so it cannot be opened here."
ARRIVAL_UNCHECKED = (
    "MTurk could not be reached to confirm your assignment. Please try again in a minute "
    "(reload this page); your work so far is kept."
)


def mturk_client(*, sandbox: bool | None = None, config: Config | None = None):
    """A boto3 `mturk` client for the sandbox (default, settings.MTURK_SANDBOX) or production."""
    if sandbox is None:
        sandbox = getattr(settings, "MTURK_SANDBOX", True)
    return boto3.client(
        "mturk",
        region_name="us-east-1",
        endpoint_url=SANDBOX_ENDPOINT if sandbox else PRODUCTION_ENDPOINT,
        config=config,
    )


def mturk_arrival_verify(*, hit: Hit, assignment_id: str, worker_id: str, client=None) -> str:
    """Ask MTurk (GetAssignment) whether an ExternalQuestion arrival is genuine; return the MTurk status.

    A submitted, approved or rejected assignment must name this worker and this HIT (`hit.external_hit_id`,
    so a HIT of ours): its AssignmentStatus is returned. MTurk does not describe an accepted, not yet
    submitted assignment: it answers RequestError "This operation can be called with a status of: ...",
    which proves the assignment id exists but not whose it is; ASSIGNMENT_ACCEPTED is returned and the
    caller relies on the assignment id staying bound to the first worker who brought it.
    Raises ApplicationError 403 when MTurk contradicts the arrival or does not know the assignment, 503
    when MTurk cannot be asked (network, credentials, MTurk's own fault). One MTurk call, no writes.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    if not ASSIGNMENT_ID_PATTERN.match(assignment_id):
        raise ApplicationError(ARRIVAL_REFUSED, status=403)
    try:
        client = client or mturk_client(config=ARRIVAL_CLIENT_CONFIG)
        response = client.get_assignment(AssignmentId=assignment_id)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", "")
        if code == "RequestError" and NOT_SUBMITTED_MESSAGE in message:
            return ASSIGNMENT_ACCEPTED
        if code == "RequestError":  # "Assignment ... does not exist", or not one of this requester's
            logger.warning(
                "MTurk arrival refused: assignment %s on HIT %s: %s", assignment_id, hit.external_hit_id, message
            )
            raise ApplicationError(ARRIVAL_REFUSED, status=403) from error
        logger.error("MTurk arrival not checked: assignment %s: %s", assignment_id, error)
        raise ApplicationError(ARRIVAL_UNCHECKED, status=503) from error
    except BotoCoreError as error:
        logger.error("MTurk arrival not checked: assignment %s: %s", assignment_id, error)
        raise ApplicationError(ARRIVAL_UNCHECKED, status=503) from error
    assignment = response.get("Assignment") or {}
    if assignment.get("WorkerId") != worker_id or assignment.get("HITId") != hit.external_hit_id:
        logger.warning(
            "MTurk arrival refused: assignment %s belongs to another worker or HIT (%s, not %s)",
            assignment_id,
            assignment.get("HITId"),
            hit.external_hit_id,
        )
        raise ApplicationError(ARRIVAL_REFUSED, status=403)
    return assignment.get("AssignmentStatus") or ASSIGNMENT_ACCEPTED


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
            Description=("Look at each image and its description and say whether the image is correctly described."),
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


def mturk_approve(*, assignment: Assignment, client, feedback: str = "", override_rejection: bool = False) -> None:
    """Approve the MTurk assignment behind `assignment` (no-op for local workers); `override_rejection`
    approves one that MTurk has as rejected."""
    if not assignment.external_assignment_id:
        return
    kwargs = {"AssignmentId": assignment.external_assignment_id}
    if feedback:
        kwargs["RequesterFeedback"] = feedback[:1024]
    if override_rejection:
        kwargs["OverrideRejection"] = True
    client.approve_assignment(**kwargs)


def mturk_assignment_status(*, assignment: Assignment, client) -> str:
    """MTurk's AssignmentStatus of a submitted assignment ("Submitted", "Approved", "Rejected"). One call."""
    response = client.get_assignment(AssignmentId=assignment.external_assignment_id)
    return (response.get("Assignment") or {}).get("AssignmentStatus", "")


def mturk_reject(*, assignment: Assignment, client, feedback: str) -> None:
    """Reject the MTurk assignment behind `assignment`; MTurk requires feedback for the worker."""
    if not assignment.external_assignment_id:
        return
    if not feedback.strip():
        raise ApplicationError("MTurk requires a reason for a rejection.")
    client.reject_assignment(AssignmentId=assignment.external_assignment_id, RequesterFeedback=feedback[:1024])
