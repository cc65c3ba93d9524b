"""The Celery task names: the one home of each name.

Services enqueue by name (annotator.core.queue) because `annotator` never imports `workers`; the tasks in
`workers/tasks/` register under these names, and the beat schedule and routes in config/settings.py use
them too. `tests/workers/test_task_names.py` checks that every name here is a registered task and that
every registered task of ours has its name here.
"""

ASSIGNMENT_SCORE = "workers.tasks.quality.assignment_score_task"
ASSIGNMENTS_AUTO_APPROVE = "workers.tasks.quality.assignments_auto_approve_task"
ASSIGNMENTS_EXPIRE = "workers.tasks.leases.assignments_expire_task"
BONUS_SEND = "workers.tasks.mturk.bonus_send_task"
CAMPAIGN_BUILD = "workers.tasks.campaigns.campaign_build_task"
CXC_ANNOTATOR_SCORES = "workers.tasks.evaluations.cxc_annotator_scores_task"
DATASET_IMPORT = "workers.tasks.datasets.dataset_import_task"
ENLARGEMENT = "workers.tasks.pools.enlargement_task"
EVALUATION_RUN = "workers.tasks.evaluations.evaluation_run"
EXPORT_RUN = "workers.tasks.exports.export_run"
EXTERNAL_DECISION_SEND = "workers.tasks.mturk.external_decision_send_task"
LABELS_AGGREGATE = "workers.tasks.quality.labels_aggregate_task"
LABELS_AGGREGATE_STALE = "workers.tasks.quality.labels_aggregate_stale_task"
POOL_IMPORT = "workers.tasks.pools.pool_import_task"
RANKING_RUN = "workers.tasks.ranking.ranking_run_task"
RANKING_SHARD = "workers.tasks.ranking.ranking_shard_task"
REFINEMENT_SCORE = "workers.tasks.refinement.refinement_score_task"
WEBHOOK_DELIVER = "workers.tasks.webhooks.webhook_deliver_task"
WEBHOOKS_DELIVER_DUE = "workers.tasks.webhooks.webhooks_deliver_due_task"
WORK_SWEEP = "workers.tasks.sweep.work_sweep_task"
WORKER_MESSAGE_SEND = "workers.tasks.mturk.worker_message_send_task"

# Every ranking task, as a Celery route pattern: they run on the `gpu` queue (torch and a model).
RANKING_ALL = "workers.tasks.ranking.*"
