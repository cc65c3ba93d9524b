"""gunicorn for Vericap: the Dockerfile, docker-compose.yml and bench/hit_serving.py all start it with this file.

    gunicorn config.wsgi -c config/gunicorn.conf.py

Threads, not processes, carry the concurrency: a crowd worker's requests are short and mostly wait on
PostgreSQL and Redis. The worker class is gthread with a bounded queue (config/gunicorn_worker.py): a
request that waited longer than VERICAP_MAX_QUEUE_WAIT seconds is answered 503 with Retry-After at
once instead of being run late, so past capacity the server refuses clearly and never drops a
connection. docs/operations.md ("Serving the crowd") has the measurements behind these numbers. Every
value can be changed from the environment (GUNICORN_*) or the command line.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "config.gunicorn_worker.SheddingWorker")
# Open connections per process: people keep theirs between items (keep-alive), so a thousand workers
# need a thousand connections across the processes; the thread pool serves those that are readable.
worker_connections = int(os.environ.get("GUNICORN_WORKER_CONNECTIONS", "2000"))
# Connections the kernel holds before a process accepts them (capped by net.core.somaxconn).
backlog = int(os.environ.get("GUNICORN_BACKLOG", "4096"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "120"))  # people pause between items; keep connections
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
# The same access log line, with only the atoms its format names worked out (config/gunicorn_logging.py).
logger_class = os.environ.get("GUNICORN_LOGGER_CLASS", "config.gunicorn_logging.Logger")
