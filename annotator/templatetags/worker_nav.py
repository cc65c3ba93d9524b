"""The worker's top bar: what they have earned so far, next to their work (approved HITs x reward, as the
work page's dashboard counts it)."""

from django import template

from annotator.crowd.selectors.work import worker_dashboard
from annotator.models import Worker

register = template.Library()


@register.simple_tag
def worker_earnings(user) -> str:
    """The earnings of a worker account ("$1.40"; "$0.00" before their first approved HIT), or "" for a
    stand-in user without an account: the HIT page renders its top bar once for every worker (a cached
    frame, annotator/crowd/views/hit_page.py) and leaves the amount out rather than show one worker's to another;
    the HIT page sets nav_without_earnings, so its template page and its frame agree."""
    if getattr(user, "pk", None) is None or not getattr(user, "is_authenticated", False):
        return ""
    worker = Worker.objects.filter(user_id=user.pk).first()
    return worker_dashboard(worker=worker)["earnings"] if worker is not None else "$0.00"
