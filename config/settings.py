"""Settings, all from the environment.

With no environment at all this is the embedded default: SQLite at an absolute path under the project,
Celery tasks run eagerly in-process, files on the local disk. Production sets DATABASE_URL,
CELERY_BROKER_URL and the S3 variables, and uses `config.settings_production`, which refuses to start
with DEBUG on or without a secret key.
"""

import ipaddress
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from annotator.core import task_names

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()

DEBUG = env.bool("DEBUG", default=True)
# Only the embedded default may fall back to a development key; settings_production refuses it.
DEVELOPMENT_SECRET_KEY = "vericap-development-only-key-not-for-production"
SECRET_KEY = env.str("SECRET_KEY", default=DEVELOPMENT_SECRET_KEY)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "annotator",
    "api",
    "workers",
]

MIDDLEWARE = [
    # First: a body over the limit is refused from its Content-Length before anything reads it (the CSRF
    # check reads the POST body, which would write a large upload to a temporary file).
    "annotator.core.middleware.RequestSizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # django-csp's, with the site-wide header built once (annotator/core/middleware.py).
    "annotator.core.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # PostgreSQL or Redis blinking: a safe request is tried once more, anything else is a 503 with
    # Retry-After, never a 500 (annotator/core/resilience/middleware.py, docs/operations.md).
    "annotator.core.resilience.middleware.OutageMiddleware",
    # A view's error as its 4xx page (or JSON for scripts), from the same mapping as the API's handler.
    "annotator.core.middleware.ErrorPageMiddleware",
    # Long work a request starts goes to the background, on the embedded default too (annotator/core/queue.py).
    "annotator.core.queue.LongWorkInBackgroundMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]

# The client's address (annotator.core.addresses, one rule for the API throttles, the sign-up limit, the log-in
# lock-out and the audit log): the number of reverse proxies in front that append to X-Forwarded-For. 0 (the
# default, no proxy): the connecting address. N: the N-th address from the right of X-Forwarded-For, so an
# address a client writes into the header itself is never believed. AXES_IPWARE_PROXY_COUNT is the old name.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=env.int("AXES_IPWARE_PROXY_COUNT", default=0))

# Axes first: it refuses a locked-out (user name, address) pair, or a user name or address inside its
# growing delay, before any password is checked, and counts failures. It has no get_user, so code that
# logs a user in by hand names AccountBackend (annotator.core.views.accounts), the ModelBackend that loads the
# role and the Worker with the user.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "annotator.crowd.auth.AccountBackend"]
# Log-in lock-out (django-axes): this many failures for one user name from one address lock that pair for
# AXES_COOLOFF_MINUTES; the owner logs in from any other address meanwhile. The lock-out page answers 429
# with Retry-After (annotator.core.views.lockout).
AXES_ENABLED = env.bool("AXES_ENABLED", default=True)
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=20)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("AXES_COOLOFF_MINUTES", default=30.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# A try refused during a lock-out or a delay checks no password, so it is not one more failure: waiting it
# out always works (axes' default counts it, which would keep a lock-out going for as long as tries come).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "annotator.core.views.lockout.lockout_response"
AXES_USERNAME_FORM_FIELD = "username"
AXES_CLIENT_IP_CALLABLE = "annotator.core.addresses.client_address"
# The growing delays (annotator.core.services.login_guard) and the owner's notice of failed log-ins
# since their last one, counted from axes' failure log.
AXES_HANDLER = "annotator.core.services.login_guard.LoginGuardHandler"
AXES_ENABLE_ACCESS_FAILURE_LOG = True
# Growing delays: after LOGIN_SLOWDOWN_USERNAME_AFTER failures for one user name (from any addresses), or
# LOGIN_SLOWDOWN_ADDRESS_AFTER from one address (for any user names), each further failure makes the next
# try wait LOGIN_SLOWDOWN_BASE_SECONDS, doubling, at most LOGIN_SLOWDOWN_MAX_SECONDS. An address the user
# logged in from before is not slowed down by their user name's count. Counts are forgotten
# LOGIN_SLOWDOWN_FORGET_SECONDS after the last failure.
LOGIN_SLOWDOWN_USERNAME_AFTER = env.int("LOGIN_SLOWDOWN_USERNAME_AFTER", default=20)
LOGIN_SLOWDOWN_ADDRESS_AFTER = env.int("LOGIN_SLOWDOWN_ADDRESS_AFTER", default=100)
LOGIN_SLOWDOWN_BASE_SECONDS = env.float("LOGIN_SLOWDOWN_BASE_SECONDS", default=1.0)
LOGIN_SLOWDOWN_MAX_SECONDS = env.float("LOGIN_SLOWDOWN_MAX_SECONDS", default=900.0)
LOGIN_SLOWDOWN_FORGET_SECONDS = env.int("LOGIN_SLOWDOWN_FORGET_SECONDS", default=24 * 3600)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotator.core.selectors.access.template_context",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'vericap.sqlite3'}")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=0)
# A kept connection that PostgreSQL dropped (a restart, pg_terminate_backend) is found and replaced at the
# start of the next request or task instead of failing its first query.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("CONN_HEALTH_CHECKS", default=True)
# A pooler in transaction mode (PgBouncer, docker-compose.yml) between Django and PostgreSQL hands each
# transaction to whichever server connection is free, so nothing may outlive a transaction on one: no
# server-side cursors (Django's `.iterator()` would open them WITH HOLD) and no PREPAREd statements
# (annotator/crowd/rows.py then sends its SQL text each time). Off = Django talks to PostgreSQL directly.
DATABASE_TRANSACTION_POOLING = env.bool("DATABASE_TRANSACTION_POOLING", default=False)
if DATABASE_TRANSACTION_POOLING:
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default serves a few people at once; wait for the write lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
    # Writers take the lock when their transaction begins, so two requests that read then write (a HIT
    # claim, an autosave) queue for it instead of one failing with "database is locked".
    DATABASES["default"]["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
    # Write-ahead logging: pages keep reading while a background ranking or import commits its chunks (in
    # the default rollback journal a writer spilling to disk locks readers out). Kept in the file once set.
    DATABASES["default"]["OPTIONS"].setdefault("init_command", "PRAGMA journal_mode=WAL;")
    if DATABASES["default"]["NAME"] not in ("", ":memory:"):
        # A fresh clone has no var/ yet; SQLite creates the file but not its directory.
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's full set, applied wherever a password is set (sign-up, the admin, createsuperuser, changepassword).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=VAR_DIR / "staticfiles")
MEDIA_URL = env.str("MEDIA_URL", default="/media/")
MEDIA_ROOT = env.path("MEDIA_ROOT", default=VAR_DIR / "media")

AWS_STORAGE_BUCKET_NAME = env.str("AWS_STORAGE_BUCKET_NAME", default="")
AWS_S3_ENDPOINT_URL = env.str("AWS_S3_ENDPOINT_URL", default=None)
AWS_S3_REGION_NAME = env.str("AWS_S3_REGION_NAME", default=None)
AWS_ACCESS_KEY_ID = env.str("AWS_ACCESS_KEY_ID", default=None)
AWS_SECRET_ACCESS_KEY = env.str("AWS_SECRET_ACCESS_KEY", default=None)
AWS_QUERYSTRING_AUTH = env.bool("AWS_QUERYSTRING_AUTH", default=True)
if AWS_STORAGE_BUCKET_NAME:
    DEFAULT_STORAGE = {"BACKEND": "storages.backends.s3.S3Storage"}
else:
    DEFAULT_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
STORAGES = {
    "default": DEFAULT_STORAGE,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="memory://")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=None)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=CELERY_BROKER_URL == "memory://")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    task_names.RANKING_ALL: {"queue": "gpu"},
    task_names.ENLARGEMENT: {"queue": "gpu"},
    task_names.CXC_ANNOTATOR_SCORES: {"queue": "gpu"},  # a model embeds the rated items
}
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=6 * 3600)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=6 * 3600 - 60)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A broker that is down costs a request about a second, not a hang: short socket timeouts and a short
# publish retry. What could not be sent after a commit is left to the sweep (annotator/core/queue.py).
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 10}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True  # a worker started while Redis restarts waits for it
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A worker waits out a Redis that refuses writes (maxmemory) instead of dying on it (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:RedisTransport"
CELERY_BEAT_SCHEDULE = {}  # filled by the issues that need periodic work (lease expiry, auto-approval)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # DRF's TokenAuthentication that also counts wrong tokens per address (429 over the rate).
        "api.authentication.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
    # Per token (the caller's account) and per address; over either a 429 with Retry-After.
    "DEFAULT_THROTTLE_CLASSES": ["api.throttles.TokenRateThrottle", "api.throttles.AddressRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "token": env.str("API_THROTTLE_TOKEN", default="600/minute"),
        "address": env.str("API_THROTTLE_ADDRESS", default="1200/minute"),
        "token_failure": env.str("API_THROTTLE_TOKEN_FAILURES", default="20/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Vericap API",
    "DESCRIPTION": "Verified image-caption associations: datasets, machine annotators, campaigns, labels.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc assets are served locally (drf-spectacular-sidecar), no CDN needed.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several serializers have a `format` or `kind` field with different choices; name each set once.
    "ENUM_NAME_OVERRIDES": {
        "FormatEnum": "annotator.labels.models.exports.ExportFormat.choices",
        "KindEnum": "annotator.ranking.models.ranking.AnnotatorKind.choices",
        "LabelSetKindEnum": "annotator.labels.models.labelsets.LabelSetKind.choices",
        "LabelSetFormatEnum": "annotator.labels.models.labelsets.LabelSetFormat.choices",
        "LabelSetExportFormatEnum": "annotator.labels.services.labelsets.exports.FORMATS",
        "JobStatusEnum": "annotator.labels.models.exports.ExportStatus.choices",
        "WebhookEventEnum": "annotator.core.models.webhooks.WebhookEvent.choices",
        "DeliveryErrorEnum": "annotator.core.models.webhooks.DeliveryError.choices",
        "PayoutStatusEnum": "annotator.crowd.models.money.PayoutStatus.choices",
        "ImportStatusEnum": "annotator.datasets.models.dataset.DatasetStatus.choices",  # datasets and pools alike
    },
}

# Import limits (Pillow): a decompression bomb is refused before it is decoded.
IMPORT_MAX_IMAGE_PIXELS = env.int("IMPORT_MAX_IMAGE_PIXELS", default=64_000_000)
IMPORT_MAX_IMAGE_BYTES = env.int("IMPORT_MAX_IMAGE_BYTES", default=25 * 1024 * 1024)
IMPORT_ALLOWED_FORMATS = env.list("IMPORT_ALLOWED_FORMATS", default=["JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF"])
THUMBNAIL_SIZE = env.int("THUMBNAIL_SIZE", default=384)
# Uploads on the page and the API (MS-COCO-sized sets go by `manage.py import_dataset`): a request body over
# IMPORT_MAX_UPLOAD_BYTES is refused (413) from its Content-Length; a zip is screened before it is stored
# (annotator.datasets.files.screening): members, their total unpacked size and their compression ratio.
IMPORT_MAX_UPLOAD_BYTES = env.int("IMPORT_MAX_UPLOAD_BYTES", default=100 * 1024 * 1024)
IMPORT_MAX_ZIP_MEMBERS = env.int("IMPORT_MAX_ZIP_MEMBERS", default=50_000)
IMPORT_MAX_UNZIPPED_BYTES = env.int("IMPORT_MAX_UNZIPPED_BYTES", default=2 * 1024 * 1024 * 1024)
IMPORT_MAX_ZIP_RATIO = env.float("IMPORT_MAX_ZIP_RATIO", default=100.0)
# The longest caption an import accepts (characters): a longer one is refused with its line (or COCO record)
# named, at upload (annotator.datasets.files.screening) and in the import's validation pass.
IMPORT_MAX_CAPTION_CHARS = env.int("IMPORT_MAX_CAPTION_CHARS", default=2000)
# Threads that read, check, thumbnail and store image files during an import (I/O bound: S3 round trips).
IMPORT_THREADS = env.int("IMPORT_THREADS", default=4)

# Where ranking runs cache embeddings (through the storage API) and which device they use.
RANKING_DEVICE = env.str("RANKING_DEVICE", default="auto")
RANKING_CHUNK_ROWS = env.int("RANKING_CHUNK_ROWS", default=1024)  # query rows per top-K chunk (one commit each)
RANKING_BLOCK_MB = env.int("RANKING_BLOCK_MB", default=256)  # cap on one chunk's similarity block
RANKING_SHARD_SIZE = env.int("RANKING_SHARD_SIZE", default=4096)  # items per cached embedding shard
RANKING_TEXT_BATCH = env.int("RANKING_TEXT_BATCH", default=256)
RANKING_IMAGE_BATCH = env.int("RANKING_IMAGE_BATCH", default=64)
# A run's top-K work is cut into shards of this many chunks per direction; any `gpu` worker takes one.
RANKING_CHUNKS_PER_SHARD = env.int("RANKING_CHUNKS_PER_SHARD", default=4)
RANKING_TORCH_THREADS = env.int("RANKING_TORCH_THREADS", default=0)  # > 0: torch threads per worker process
RANKING_PRELOAD = env.list("RANKING_PRELOAD", default=[])  # annotator kinds a worker loads when it starts
RANKING_SHARD_STALE_SECONDS = env.float("RANKING_SHARD_STALE_SECONDS", default=600.0)  # silent shard: requeued

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}

# Quality control (docs/quality.md): the automatic soft block and the auto-approval beat.
QUALITY_SOFT_BLOCK_MIN_GOLD = env.int("QUALITY_SOFT_BLOCK_MIN_GOLD", default=6)
QUALITY_SOFT_BLOCK_GOLD_ACCURACY = env.float("QUALITY_SOFT_BLOCK_GOLD_ACCURACY", default=0.8)
QUALITY_SOFT_BLOCK_MIN_DECIDED = env.int("QUALITY_SOFT_BLOCK_MIN_DECIDED", default=10)
QUALITY_SOFT_BLOCK_APPROVAL_RATE = env.float("QUALITY_SOFT_BLOCK_APPROVAL_RATE", default=0.5)
QUALITY_CAREFUL_ACCURACY = env.float("QUALITY_CAREFUL_ACCURACY", default=0.9)
QUALITY_CHANCE_ACCURACY = env.float("QUALITY_CHANCE_ACCURACY", default=0.5)
QUALITY_SPAMMER_PRIOR = env.float("QUALITY_SPAMMER_PRIOR", default=0.2)
QUALITY_SOFT_BLOCK_POSTERIOR = env.float("QUALITY_SOFT_BLOCK_POSTERIOR", default=0.95)
QUALITY_TRUSTED_MIN_GOLD = env.int("QUALITY_TRUSTED_MIN_GOLD", default=6)
QUALITY_TRUSTED_MAX_POSTERIOR = env.float("QUALITY_TRUSTED_MAX_POSTERIOR", default=0.05)
# Adaptive gold (docs/quality.md): gold answers right in a row (since the last miss) before a claim offers a
# worker the campaign's gold-light HITs first. 4 in a row leave P(guessing) at 0.02 under the trust model.
QUALITY_GOLD_LIGHT_AFTER = env.int("QUALITY_GOLD_LIGHT_AFTER", default=4)
QUALITY_PEER_MIN_ITEMS = env.int("QUALITY_PEER_MIN_ITEMS", default=8)
# Fewer comparisons than QUALITY_PEER_MIN_ITEMS may still condemn a worker when P(accuracy < FLAG_BELOW) reaches
# QUALITY_POSTERIOR_HIT_LEVEL; below this many, careful workers who disagree on four or five pairs reach it at times.
QUALITY_PEER_STRONG_MIN_ITEMS = env.float("QUALITY_PEER_STRONG_MIN_ITEMS", default=5.0)
QUALITY_PEER_WAIT_HOURS = env.float("QUALITY_PEER_WAIT_HOURS", default=72.0)
# The crowd check before approval (annotator/quality/services/crowd_check.py): flag a worker when P(accuracy < BELOW)
# is at least LEVEL over their answers in the campaign (HIT_LEVEL on one HIT's); excuse a tolerated gold
# miss when it is below EXCUSE_BELOW.
QUALITY_POSTERIOR_FLAG_BELOW = env.float("QUALITY_POSTERIOR_FLAG_BELOW", default=0.7)
QUALITY_POSTERIOR_FLAG_LEVEL = env.float("QUALITY_POSTERIOR_FLAG_LEVEL", default=0.7)
QUALITY_POSTERIOR_HIT_LEVEL = env.float("QUALITY_POSTERIOR_HIT_LEVEL", default=0.95)
QUALITY_POSTERIOR_EXCUSE_BELOW = env.float("QUALITY_POSTERIOR_EXCUSE_BELOW", default=0.7)
# Collusion (annotator/analysis/collusion.py): a couple of workers whose identical answers are this unlikely for
# independent workers (family-wise over every couple and test in the campaign), on at least MIN_COMPARED
# comparisons, is one collusion group: not each other's peers, and their work goes to review.
QUALITY_COLLUSION_LEVEL = env.float("QUALITY_COLLUSION_LEVEL", default=1e-3)
QUALITY_COLLUSION_MIN_COMPARED = env.int("QUALITY_COLLUSION_MIN_COMPARED", default=10)
# The label posterior's prior on a worker (annotator/analysis/posterior.py): a careful crowd worker is right this
# often, worth STRENGTH answers of evidence; the crowd check judges workers against a more sceptical crowd
# (CHECK_ACCURACY), so a careful worker who disagrees with one other answer is not condemned by it.
QUALITY_POSTERIOR_WORKER_ACCURACY = env.float("QUALITY_POSTERIOR_WORKER_ACCURACY", default=0.85)
QUALITY_POSTERIOR_WORKER_STRENGTH = env.float("QUALITY_POSTERIOR_WORKER_STRENGTH", default=10.0)
QUALITY_POSTERIOR_CHECK_ACCURACY = env.float("QUALITY_POSTERIOR_CHECK_ACCURACY", default=0.8)
# Hierarchical: the label posterior's workers start from the crowd's accuracy at work (WORKER_ACCURACY is then the
# centre of the crowd's own prior, moved by the requester's gold record), worth CROWD_STRENGTH answers.
QUALITY_POSTERIOR_CROWD_STRENGTH = env.float("QUALITY_POSTERIOR_CROWD_STRENGTH", default=20.0)
# Item difficulty by rank: the label posterior learns the crowd's specificity apart on candidates ranked first and
# on those ranked second or third (annotator.quality.selectors.posterior.difficulty_classes); off, one specificity
# per worker, learnt mostly on gold negatives, which are never top-ranked (docs/quality.md, "Item difficulty by rank").
QUALITY_POSTERIOR_RANK_DIFFICULTY = env.bool("QUALITY_POSTERIOR_RANK_DIFFICULTY", default=True)
# The machine prior's logistic model is cross-fitted in this many folds: a pair's prior never comes from a model fitted
# on its own answers (annotator.analysis.posterior.PosteriorPrior.prior_folds). 1: one fit over every pair.
QUALITY_POSTERIOR_PRIOR_FOLDS = env.int("QUALITY_POSTERIOR_PRIOR_FOLDS", default=5)
# A campaign's finished vision-language judge run is the machine prior through its P(yes) calibrated on the gold
# (annotator.quality.selectors.judge_prior); off, the judge is one more run in the machine prior's features.
# Off by default: in the crowd rehearsal with a 90% judge it spent 2.31 answers per pair against 1.59 for the
# features model, which learns the judge's accuracy from the crowd as well as from the gold (docs/ranking.md).
QUALITY_POSTERIOR_JUDGE_PRIOR = env.bool("QUALITY_POSTERIOR_JUDGE_PRIOR", default=False)
# The crowd check also judges a worker on pairs nobody else answered, against the machine prior (campaigns with one):
# with about 1.5 answers per pair most of a new worker's pairs have no other answer, and a careful worker with one
# gold miss was left with too few comparisons to be vouched for.
QUALITY_POSTERIOR_MACHINE_WITNESS = env.bool("QUALITY_POSTERIOR_MACHINE_WITNESS", default=True)
QUALITY_GOLD_DISPUTE_MIN_ANSWERS = env.int("QUALITY_GOLD_DISPUTE_MIN_ANSWERS", default=5)
QUALITY_GOLD_DISPUTE_SHARE = env.float("QUALITY_GOLD_DISPUTE_SHARE", default=0.5)
CELERY_BEAT_SCHEDULE["quality-auto-approve"] = {
    "task": task_names.ASSIGNMENTS_AUTO_APPROVE,
    "schedule": env.float("QUALITY_AUTO_APPROVE_EVERY_SECONDS", default=300.0),
}
CELERY_BEAT_SCHEDULE["quality-aggregate"] = {
    "task": task_names.LABELS_AGGREGATE_STALE,
    "schedule": env.float("QUALITY_AGGREGATE_EVERY_SECONDS", default=900.0),
}

# Crowd workers (docs/workers.md): sign-up invite code (empty = open) and the lease-expiry beat.
# Where the Django admin lives: a path prefix such as "staff-7f3c/", or empty for no admin at all. The
# embedded default keeps "admin/"; production (config.settings_production) has none unless one is set.
# Admin log-ins go through django-axes like every other log-in.
ADMIN_URL = env.str("ADMIN_URL", default="admin/").strip("/")
ADMIN_URL = f"{ADMIN_URL}/" if ADMIN_URL else ""
SIGNUP_INVITE_CODE = env.str("SIGNUP_INVITE_CODE", default="")
# The HIT page's autosave (static/js/hit.js): the answers not yet acknowledged go in one request once this
# many items wait, or this many seconds after the last change; always when the page is hidden or closed
# (a beacon) and with the submit. What is unsent also waits in the browser's localStorage.
HIT_AUTOSAVE_BATCH_ITEMS = env.int("HIT_AUTOSAVE_BATCH_ITEMS", default=6)
HIT_AUTOSAVE_WAIT_SECONDS = env.float("HIT_AUTOSAVE_WAIT_SECONDS", default=10.0)
# Sign-up tries per address (annotator.core.addresses) and hour; 429 after. A sign-up says a name is taken only
# once everything else in the form is valid, so each such answer costs a whole valid try.
SIGNUP_RATE_PER_HOUR = env.int("SIGNUP_RATE_PER_HOUR", default=20)
# Check each MTurk arrival with GetAssignment (docs/workers.md). On when MTurk is configured: AWS keys that
# boto3 (mturk_client) will use are in the environment, or DEBUG is off (keys from an instance role).
MTURK_VERIFY_ARRIVALS = env.bool(
    "MTURK_VERIFY_ARRIVALS", default=not DEBUG or bool(AWS_ACCESS_KEY_ID or env.str("AWS_PROFILE", default=""))
)
# MTurk shows our pages in a cross-site iframe: production behind https sets both to "None" (with Secure cookies).
MTURK_SANDBOX = env.bool("MTURK_SANDBOX", default=True)
SESSION_COOKIE_SAMESITE = env.str("SESSION_COOKIE_SAMESITE", default="Lax")
CSRF_COOKIE_SAMESITE = env.str("CSRF_COOKIE_SAMESITE", default="Lax")
# Every worker request reads the session (an autosave is most of the traffic). CACHE_URL=redis://host:6379/N
# gives a cache shared by all server processes, and then sessions are read from it (cached_db: still
# written to the database, so nothing is lost when Redis restarts). A session cache needs a shared cache:
# a per-process one would keep a logged-out session alive in the other processes, so that is refused.
CACHE_URL = env.str("CACHE_URL", default="")
if CACHE_URL:
    # Fail-soft: while Redis is unreachable or refuses writes the cache answers misses, and sessions are read
    # from the database (annotator/core/resilience/cache.py).
    CACHES = {"default": {"BACKEND": "annotator.core.resilience.cache.FailSoftRedisCache", "LOCATION": CACHE_URL}}
SESSION_ENGINE = env.str(
    "SESSION_ENGINE",
    default="django.contrib.sessions.backends.cached_db" if CACHE_URL else "django.contrib.sessions.backends.db",
)
if SESSION_ENGINE.rsplit(".", 1)[-1] in ("cache", "cached_db") and not CACHE_URL:
    raise ImproperlyConfigured(f"SESSION_ENGINE={SESSION_ENGINE} needs CACHE_URL (a cache all processes share).")
CELERY_BEAT_SCHEDULE["webhooks-retry"] = {
    "task": task_names.WEBHOOKS_DELIVER_DUE,
    "schedule": env.float("WEBHOOKS_RETRY_EVERY_SECONDS", default=30.0),
}
# Webhook receivers inside the network (annotator/core/services/webhooks/targets.py). A webhook URL must lead to
# public unicast addresses only, checked when it is saved and before every delivery; an operator who runs a
# receiver inside the network names it here, comma-separated: addresses or CIDR networks (any address inside
# passes, e.g. 10.20.0.0/16) and host names (trusted whatever they resolve to). Both empty by default.
WEBHOOK_ALLOWED_NETWORKS = env.list("WEBHOOK_ALLOWED_NETWORKS", default=[])
WEBHOOK_ALLOWED_HOSTS = env.list("WEBHOOK_ALLOWED_HOSTS", default=[])
for _network in WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"WEBHOOK_ALLOWED_NETWORKS: {_network!r} is not an address or CIDR network."
        ) from None
CELERY_BEAT_SCHEDULE["leases-expire"] = {
    "task": task_names.ASSIGNMENTS_EXPIRE,
    "schedule": env.float("LEASES_EXPIRE_EVERY_SECONDS", default=60.0),
}

# Campaign estimates (campaigns area): a worker's seconds per HIT item (ECCV's lab study: 4-8 minutes for
# an 18-item HIT) and how many workers are busy at the same time on average.
CAMPAIGN_SECONDS_PER_ITEM = env.float("CAMPAIGN_SECONDS_PER_ITEM", default=20.0)
CAMPAIGN_ACTIVE_WORKERS = env.int("CAMPAIGN_ACTIVE_WORKERS", default=10)

# Evaluations: the CIDEr relevance matrix of SR@k / NCS@k is computed for test sets up to this many
# (image, caption) pairs (a 5K test set has 125M: about 1 GB of float64 and seconds of CPU); bootstrap
# resamples per metric interval.
SEMANTIC_MAX_PAIRS = env.int("SEMANTIC_MAX_PAIRS", default=150_000_000)
EVALUATION_RESAMPLES = env.int("EVALUATION_RESAMPLES", default=1000)

# Content-Security-Policy (django-csp) on every response: scripts, styles and everything else from this
# origin only (no inline script or style anywhere in the templates), images also from the media host.
# Framing by this origin only; the worker's pages that MTurk shows widen frame-ancestors to MTurk
# (annotator.crowd.views.work). Forms may post to MTurk's externalSubmit.
MTURK_ORIGINS = ["https://www.mturk.com", "https://workersandbox.mturk.com"]
CSP_EXTRA_IMG_SRC = env.list("CSP_EXTRA_IMG_SRC", default=[])
_media_origins = []
if AWS_STORAGE_BUCKET_NAME:
    _media_origins = [AWS_S3_ENDPOINT_URL] if AWS_S3_ENDPOINT_URL else ["https://*.amazonaws.com"]
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:", *_media_origins, *CSP_EXTRA_IMG_SRC],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'", *MTURK_ORIGINS],
        "frame-ancestors": ["'self'"],
    },
}
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True

# Faults (docs/operations.md): how long a person is asked to wait after a 503, and the sweep that finds work
# whose Celery message was lost (a broker restart, a killed worker) and does it or queues it again.
OUTAGE_RETRY_AFTER_SECONDS = env.int("OUTAGE_RETRY_AFTER_SECONDS", default=5)
SWEEP_SCORE_AFTER_SECONDS = env.float("SWEEP_SCORE_AFTER_SECONDS", default=60.0)
SWEEP_JOB_STALE_SECONDS = env.float("SWEEP_JOB_STALE_SECONDS", default=600.0)
CELERY_BEAT_SCHEDULE["work-sweep"] = {
    "task": task_names.WORK_SWEEP,
    "schedule": env.float("SWEEP_EVERY_SECONDS", default=30.0),
}
