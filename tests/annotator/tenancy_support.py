"""Two requesters (tenants) and one worker who did a scored HIT for each; requester B blocked the worker.

A's record of the worker: gold 2/2. B's: gold 1/2 and a block with the reason B_REASON.
"""

from dataclasses import dataclass

from annotator import models
from annotator.quality.services.scoring import assignment_score
from annotator.quality.services.trust import worker_block
from tests.annotator.quality_support import submit
from tests.factories import WorkerFactory, live_campaign_with_hits, user_with_role

B_REASON = "b-private-reason: copies answers"


@dataclass
class Tenants:
    a: object
    b: object
    campaign_a: models.Campaign
    campaign_b: models.Campaign
    worker: models.Worker
    assignment_a: models.Assignment
    assignment_b: models.Assignment


def two_tenants() -> Tenants:
    a = user_with_role(models.Role.REQUESTER, username="req-a")
    b = user_with_role(models.Role.REQUESTER, username="req-b")
    campaign_a = live_campaign_with_hits(hits=3, owner=a, qualification_items=0)
    campaign_b = live_campaign_with_hits(hits=3, owner=b, qualification_items=0)
    worker = WorkerFactory(pseudonym="w-shared")
    done_a = submit(campaign_a.hits.get(index=0), worker=worker, candidate="yes", gold_negative="no")  # gold 2/2
    done_b = submit(campaign_b.hits.get(index=0), worker=worker, candidate="no", gold_negative="yes")  # gold 1/2
    assignment_a = assignment_score(assignment_id=done_a.pk)
    assignment_b = assignment_score(assignment_id=done_b.pk)
    worker_block(worker=worker, requester=b, actor=b, reason=B_REASON)
    return Tenants(a, b, campaign_a, campaign_b, worker, assignment_a, assignment_b)
