#!/usr/bin/env bash
# `make image-smoke`: the production image built from the Dockerfile and run, here, with podman.
#
#  1. the base image python:3.11-slim, made locally when missing (bench/image_base.sh);
#  2. the app image from the Dockerfile, and PgBouncer's from Dockerfile.pgbouncer;
#  3. a fresh database of its own on this machine's PostgreSQL, migrate and collectstatic in a one-off
#     container, then `demo_setup` in another (the demo dataset imported, both machine annotators ranked
#     in-process with the image's torch, the demo campaign built and launched);
#  4. PgBouncer (transaction pooling), two web containers behind it, a Celery worker and beat, all with
#     --network host against this machine's PostgreSQL and Redis (a Redis db of its own);
#  5. /healthz on both web containers, then bench/image_smoke.py: two workers log in and do one HIT each
#     at the same time, each through its own web container (log-in, claim, page, autosave, submit), and
#     the database is checked (one answer per item and assignment, one submit each, scored by the worker);
#  6. PgBouncer's own count of what went through it; every container still running; all removed.
# Not part of `make test`. Wall time: docs/operations.md ("The production image, built and run here").
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
step() { echo "== [$(($(date +%s) - started)) s] $*"; }

mkdir -p var/image_smoke
if [[ -z "${CONTAINERS_CONF:-}" ]]; then
    # Containers here may not set resource limits: no default ulimits.
    printf '[containers]\ndefault_ulimits = []\n' >var/image_smoke/containers.conf
    export CONTAINERS_CONF=$PWD/var/image_smoke/containers.conf
fi
export PODMAN=${PODMAN:-podman --runtime runc}
PY=${PY:-.venv/bin/python}
PG=${SMOKE_PG:-postgres://postgres@127.0.0.1:5432}
DB=${SMOKE_DB:-image_smoke}
BROKER_DB=${SMOKE_REDIS_DB:-13}
CACHE_DB=${SMOKE_CACHE_DB:-14}
WEB_PORTS=(${SMOKE_WEB_PORTS:-18080 18081})
PGB_PORT=${SMOKE_PGBOUNCER_PORT:-16432}
TORCH_WHEELS=${TORCH_WHEELS:-/opt/wheels}
NAME=vericap-smoke
CONTAINERS=(pgbouncer worker beat)
for i in "${!WEB_PORTS[@]}"; do CONTAINERS+=("web$((i + 1))"); done

cleanup() {
    for c in "${CONTAINERS[@]}"; do $PODMAN rm -f -t 5 "$NAME-$c" >/dev/null 2>&1 || true; done
}
finish() {
    local status=$?
    if [[ $status -ne 0 ]]; then
        for c in "${CONTAINERS[@]}"; do
            echo "-- last log lines of $NAME-$c"
            $PODMAN logs --tail 25 "$NAME-$c" 2>&1 || true
        done
        echo "image-smoke FAILED after $(($(date +%s) - started)) s"
    fi
    cleanup
    exit $status
}
trap finish EXIT

step "base image"
bench/image_base.sh

step "app image (Dockerfile)"
build_args=()
if compgen -G "$TORCH_WHEELS/torch-2.13.0*.whl" >/dev/null; then
    # No PyTorch index reachable here: the torch wheel on this machine's disk, mounted into the build.
    build_args=(-v "$TORCH_WHEELS:/wheels:ro" --build-arg TORCH_WHEEL_DIR=/wheels)
fi
$PODMAN build --network host "${build_args[@]}" -t vericap:latest .
step "PgBouncer image (Dockerfile.pgbouncer)"
$PODMAN build --network host -f Dockerfile.pgbouncer -t vericap-pgbouncer:latest .

step "database $DB and Redis dbs $BROKER_DB/$CACHE_DB, fresh"
cleanup
psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
redis-cli -n "$BROKER_DB" flushdb >/dev/null
redis-cli -n "$CACHE_DB" flushdb >/dev/null
media=$PWD/var/image_smoke/media
rm -rf "$media" && mkdir -p "$media" && chown 10001:10001 "$media" # the image's user

# The containers' key, also given to the check: a HIT item's token is an HMAC with it.
secret=$(head -c 48 /dev/urandom | base64)
app=(
    $PODMAN run --network host -v "$media:/app/var/media"
    -e DJANGO_SETTINGS_MODULE=config.settings_production
    -e SECRET_KEY="$secret"
    -e DEBUG=false
    -e ALLOWED_HOSTS=127.0.0.1,localhost
    -e CELERY_BROKER_URL="redis://127.0.0.1:6379/$BROKER_DB"
    -e CACHE_URL="redis://127.0.0.1:6379/$CACHE_DB"
    -e CELERY_TASK_ALWAYS_EAGER=false
    -e CONN_MAX_AGE=600
    -e LOG_LEVEL=INFO
)
direct=(-e DATABASE_URL="$PG/$DB")
pooled=(-e DATABASE_URL="postgres://postgres@127.0.0.1:$PGB_PORT/$DB" -e DATABASE_TRANSACTION_POOLING=true)

step "migrate and collectstatic (one-off container)"
"${app[@]}" --rm "${direct[@]}" vericap:latest \
    sh -c "python manage.py migrate --noinput && python manage.py collectstatic --noinput"
step "demo_setup (one-off container; ranking runs in it with the image's torch)"
"${app[@]}" --rm "${direct[@]}" -e CELERY_TASK_ALWAYS_EAGER=true vericap:latest python manage.py demo_setup

step "PgBouncer on 127.0.0.1:$PGB_PORT, ${#WEB_PORTS[@]} web containers behind it, a worker, beat"
$PODMAN run -d --name "$NAME-pgbouncer" --network host \
    -e PGBOUNCER_DB_HOST=127.0.0.1 -e PGBOUNCER_LISTEN_ADDR=127.0.0.1 -e PGBOUNCER_PORT="$PGB_PORT" \
    -e PGBOUNCER_USER=postgres -e PGBOUNCER_AUTH_TYPE=trust vericap-pgbouncer:latest >/dev/null
for i in "${!WEB_PORTS[@]}"; do
    "${app[@]}" -d --name "$NAME-web$((i + 1))" "${pooled[@]}" \
        -e GUNICORN_BIND="127.0.0.1:${WEB_PORTS[$i]}" -e GUNICORN_WORKERS=1 -e GUNICORN_THREADS=4 \
        vericap:latest >/dev/null
done
"${app[@]}" -d --name "$NAME-worker" "${direct[@]}" vericap:latest \
    celery -A config worker -Q default --concurrency 1 --hostname smoke@%h -l INFO >/dev/null
"${app[@]}" -d --name "$NAME-beat" "${direct[@]}" vericap:latest \
    celery -A config beat -l INFO --schedule /tmp/celerybeat-schedule >/dev/null

step "/healthz"
bases=()
for port in "${WEB_PORTS[@]}"; do
    for _ in $(seq 1 90); do
        if body=$(curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null); then break; fi
        sleep 2
    done
    [[ -n "${body:-}" ]] || { echo "web on $port never answered /healthz"; exit 1; }
    echo "  127.0.0.1:$port/healthz: $body"
    bases+=("http://127.0.0.1:$port")
    body=
done

step "one HIT per web container, at the same time, log-in to submit"
DATABASE_URL="$PG/$DB" SECRET_KEY="$secret" "$PY" bench/image_smoke.py "${bases[@]}"

step "what went through PgBouncer (transaction pooling)"
psql -h 127.0.0.1 -p "$PGB_PORT" -U postgres pgbouncer -c "SHOW POOLS" | grep -E "database|$DB"
psql -h 127.0.0.1 -p "$PGB_PORT" -U postgres pgbouncer -c "SHOW STATS" | grep -E "database|$DB"

step "/healthz says ok once beat's sweep has run (a pass every 30 s)"
for _ in $(seq 1 45); do
    body=$(curl -fsS "${bases[0]}/healthz" || true)
    [[ $body == '{"status": "ok"'* ]] && break
    sleep 2
done
echo "  ${bases[0]}/healthz: $body"
[[ $body == '{"status": "ok"'* ]] || { echo "/healthz never said ok"; exit 1; }

step "every container still running; the worker and beat started"
for c in "${CONTAINERS[@]}"; do
    [[ $($PODMAN inspect -f '{{.State.Running}}' "$NAME-$c") == true ]] || { echo "$NAME-$c stopped"; exit 1; }
done
$PODMAN logs "$NAME-worker" 2>&1 | grep -q "ready" || { echo "the worker never said ready"; exit 1; }
$PODMAN logs "$NAME-beat" 2>&1 | grep -q "beat: Starting" || { echo "beat never started"; exit 1; }

step "image-smoke passed in $(($(date +%s) - started)) s"
