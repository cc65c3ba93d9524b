from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from annotator import models


class ProfileInline(admin.StackedInline):
    """The role of an account: the admin's way to make a requester or researcher (staff only)."""

    model = models.Profile
    can_delete = False
    fields = ["role", "share_gold_record"]


admin.site.unregister(get_user_model())


@admin.register(get_user_model())
class AccountAdmin(UserAdmin):
    inlines = [ProfileInline]
    list_display = [*UserAdmin.list_display, "role"]

    @admin.display(description="role")
    def role(self, user):
        profile = getattr(user, "profile", None)
        return profile.role if profile else "-"


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "images_done", "captions_done", "owner", "created_at"]
    list_filter = ["status"]
    search_fields = ["name"]


@admin.register(models.Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["source_id", "dataset", "file_name", "width", "height"]
    list_filter = ["dataset"]
    search_fields = ["source_id", "file_name", "content_hash"]


@admin.register(models.Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ["source_id", "dataset", "image", "text"]
    list_filter = ["dataset"]
    search_fields = ["source_id", "text"]
    raw_id_fields = ["image"]


@admin.register(models.MachineAnnotator)
class MachineAnnotatorAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "checkpoint_path", "weights_hash"]


@admin.register(models.RankingRun)
class RankingRunAdmin(admin.ModelAdmin):
    list_display = ["id", "annotator", "dataset", "status", "stage", "chunks_done", "chunks_total", "created_at"]
    list_filter = ["status", "annotator"]


@admin.register(models.Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "status", "direction", "scale", "redundancy", "reward_cents"]
    list_filter = ["status", "scale"]
    filter_horizontal = ["runs", "shared_with"]


@admin.register(models.Pair)
class PairAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "kind", "image", "caption", "is_original"]
    list_filter = ["campaign", "kind", "is_original"]
    raw_id_fields = ["image", "caption", "other_image", "other_caption"]


class HitItemInline(admin.TabularInline):
    model = models.HitItem
    raw_id_fields = ["pair"]
    extra = 0


@admin.register(models.Hit)
class HitAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "index", "stage", "status", "assignments_required"]
    list_filter = ["campaign", "status"]
    inlines = [HitItemInline]


@admin.register(models.Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["pseudonym", "user", "external_id", "gold_correct", "gold_total", "blocked"]
    list_filter = ["blocked"]
    search_fields = ["pseudonym", "external_id", "user__username"]
    # A platform block goes through worker_platform_block (POST /api/v1/workers/<id>/platform-block/), which
    # keeps the reason in the trust history and writes an audit event; the admin form would skip both.
    readonly_fields = ["blocked", "blocked_reason", "gold_correct", "gold_total"]


class AssignmentEventInline(admin.TabularInline):
    model = models.AssignmentEvent
    extra = 0
    readonly_fields = ["from_status", "to_status", "actor", "reason", "created_at"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "hit", "worker", "status", "reserved_at", "expires_at", "submitted_at"]
    list_filter = ["status"]
    raw_id_fields = ["hit", "worker"]
    inlines = [AssignmentEventInline]


@admin.register(models.Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ["id", "assignment", "item", "choice", "score", "seconds_spent"]
    raw_id_fields = ["assignment", "item"]


@admin.register(models.Label)
class LabelAdmin(admin.ModelAdmin):
    list_display = ["pair", "method", "choice", "score", "is_positive", "confidence", "answer_count"]
    list_filter = ["method", "is_positive"]
    raw_id_fields = ["pair"]


admin.site.register(models.Profile)
admin.site.register(models.QualificationAttempt)
