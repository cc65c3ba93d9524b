#!/bin/sh
# Writes pgbouncer.ini and its user list from the environment, then runs PgBouncer in the foreground
# (Dockerfile.pgbouncer). Transaction pooling: a server connection serves one transaction of a client at a
# time, so a few dozen PostgreSQL backends carry the connections of every web process on every host.
set -eu
: "${PGBOUNCER_DB_HOST:?the PostgreSQL host}"
dir=/tmp/pgbouncer
mkdir -p "$dir"
printf '"%s" "%s"\n' "${PGBOUNCER_USER:-vericap}" "${PGBOUNCER_PASSWORD:-}" > "$dir/userlist.txt"
chmod 600 "$dir/userlist.txt"
cat > "$dir/pgbouncer.ini" <<INI
[databases]
* = host=${PGBOUNCER_DB_HOST} port=${PGBOUNCER_DB_PORT:-5432}

[pgbouncer]
listen_addr = ${PGBOUNCER_LISTEN_ADDR:-0.0.0.0}
listen_port = ${PGBOUNCER_PORT:-6432}
unix_socket_dir =
auth_type = ${PGBOUNCER_AUTH_TYPE:-scram-sha-256}
auth_file = $dir/userlist.txt
admin_users = ${PGBOUNCER_USER:-vericap}
stats_users = ${PGBOUNCER_USER:-vericap}
pool_mode = transaction
max_client_conn = ${PGBOUNCER_MAX_CLIENT_CONN:-2000}
default_pool_size = ${PGBOUNCER_POOL_SIZE:-20}
ignore_startup_parameters = extra_float_digits
logfile =
pidfile =
INI
exec pgbouncer "$dir/pgbouncer.ini"
