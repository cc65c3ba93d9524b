"""gunicorn for Vericap: the Dockerfile, docker-compose.yml and bench/hit_serving.py all start it with this file.

    gunicorn config.wsgi -c config/gunicorn.conf.py

Threads, not processes, carry the concurrency: a crowd worker's requests are short and mostly wait on
PostgreSQL and Redis. Every value can be changed from the environment (GUNICORN_*) or the command line.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
worker_class = "gthread"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "120"))  # people pause between items; keep connections
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
