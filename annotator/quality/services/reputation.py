"""A requester's opt-in to the shared, anonymised worker reputation (Profile.share_gold_record)."""

from django.db import transaction

from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Profile, Role


def profile_share_gold_record_set(*, user, share: bool) -> Profile:
    """Opt a requester in to (or out of) the shared reputation: while in, the gold records workers earn on
    their campaigns count in the anonymised totals other opted-in requesters read, and those totals count
    in this requester's trust figures. Locks the Profile row; idempotent."""
    with transaction.atomic():
        profile = Profile.objects.select_for_update().filter(user=user).first()
        if profile is None or profile.role != Role.REQUESTER:
            raise ApplicationError("Only requesters share gold records.", status=403)
        if profile.share_gold_record != share:
            profile.share_gold_record = share
            profile.save(update_fields=["share_gold_record"])
        return profile
