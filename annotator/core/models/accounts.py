from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    REQUESTER = "requester", "Requester"
    RESEARCHER = "researcher", "Researcher"
    WORKER = "worker", "Crowd worker"


class Profile(models.Model):
    """A person's role on the platform. Staff users act as requesters too."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.WORKER)
    # A requester's opt-in: the gold records workers earn on their campaigns join a shared, anonymised
    # reputation (totals only), which then also counts in this requester's own trust figures.
    share_gold_record = models.BooleanField(default=False)

    class Meta:
        constraints = [models.CheckConstraint(condition=models.Q(role__in=Role.values), name="profile_role_valid")]

    def __str__(self):
        return f"{self.user} ({self.role})"
