"""Paper cut (issue 35): "Aggregate labels now" said "queued" while, with no task queue (make demo), the
aggregation ran inside the request. The message now says what happened."""

import pytest
from django.urls import reverse

from annotator.models import CampaignStatus, Role
from tests.annotator.quality_support import hit_with_gold
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("eager", "said"), [(True, "done in place"), (False, "Aggregation queued")])
def test_aggregate_now_says_whether_it_was_queued_or_done(client, settings, background_tasks, eager, said):
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, redundancy=1, status=CampaignStatus.LIVE)
    client.force_login(owner)
    response = client.post(reverse("review-aggregate", args=[hit.campaign.pk]), follow=True)
    html = response.content.decode()
    assert response.status_code == 200 and said in html
    assert ("queued" in html) == (not eager)
