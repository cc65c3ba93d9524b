from annotator.models.accounts import Profile, Role
from annotator.models.campaign import (
    CAMPAIGN_TRANSITIONS,
    Campaign,
    CampaignDirection,
    CampaignStatus,
    GoldFailAction,
    Hit,
    HitItem,
    HitStatus,
    ItemRole,
    Pair,
    PairKind,
    PairSource,
    Scale,
)
from annotator.models.crowd import (
    ACTIVE_ASSIGNMENT_STATUSES,
    ASSIGNMENT_TRANSITIONS,
    CHOICES_NEEDING_SHORTCOMINGS,
    POSITIVE_CHOICES,
    STRICT_POSITIVE_CHOICES,
    AggregationMethod,
    Answer,
    Assignment,
    AssignmentEvent,
    AssignmentStatus,
    Choice,
    Label,
    QualificationAttempt,
    Shortcoming,
    Worker,
    WrongAspect,
)
from annotator.models.dataset import DATASET_TRANSITIONS, Caption, Dataset, DatasetStatus, Image
from annotator.models.quality import CleanupKind, CleanupProposal, CleanupStatus, TrustAction, WorkerTrustEvent
from annotator.models.ranking import (
    RUN_TRANSITIONS,
    AnnotatorKind,
    Candidate,
    Direction,
    MachineAnnotator,
    RankingRun,
    RunStatus,
)
from annotator.models.research import (
    EXPORT_TRANSITIONS,
    Evaluation,
    ExportFormat,
    ExportJob,
    ExportStatus,
    ExportVariant,
)

__all__ = [name for name in dir() if not name.startswith("_")]
