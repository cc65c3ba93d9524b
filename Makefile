# Vericap: `make demo` and `make test` work on a fresh machine (Python 3.11, root, package registries only).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
MANAGE := $(PY) manage.py
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: demo test lint install install-dev browser services migrate serve test-postgres test-embedded bench clean migrations image-smoke

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	# torch first and pinned: a local CPU wheel here; an unpinned torch would pull the CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) install -q -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev browser

# Debian's chromium for the browser tests (Playwright cannot download a browser here).
browser:
	@command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium chromium-driver)

# Start PostgreSQL and Redis if they are down (they normally run already on the dev and CI machines).
services:
	@pg_isready -h 127.0.0.1 -p 5432 -q || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && exit 0; sleep 1; done; echo "PostgreSQL or Redis did not come up"; exit 1

migrate: install
	$(MANAGE) migrate --noinput

demo: install migrate
	$(MANAGE) demo_setup
	@echo "Serving Vericap at http://127.0.0.1:8000 (Ctrl-C stops it)."
	@echo "Log in as requester, researcher or worker; the password of each is vericap-demo."
	$(MANAGE) runserver 127.0.0.1:8000

# The whole suite on the real PostgreSQL and Redis, and the fast part again on the embedded default: the two
# runs side by side on the two cores (TEST_JOBS=1 runs them one after the other); each run's output is
# printed when it ends.
TEST_JOBS ?= 2
test: install-dev services lint
	$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target test-postgres test-embedded

# Style and the house's rules: ruff's lint and format check, and the import contracts (pyproject.toml).
lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

test-postgres:
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) CELERY_TASK_ALWAYS_EAGER=true \
		$(VENV)/bin/pytest -q

test-embedded:
	env -u DATABASE_URL -u CELERY_BROKER_URL $(VENV)/bin/pytest -q -m "not e2e and not celery_worker and not postgres" -p no:cacheprovider

bench: install-dev services
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# The production image built from the Dockerfile and run with podman: web (two, behind PgBouncer), worker and
# beat against this machine's PostgreSQL and Redis, one HIT per web container from log-in to submit, the
# database checked. Needs root and podman; not part of `make test` (docs/operations.md, about 15 minutes).
image-smoke: install services
	bench/image_smoke.sh

# New migrations for changed models; the existing ones are history and are never regenerated.
migrations: install
	$(MANAGE) makemigrations annotator

clean:
	rm -rf var .pytest_cache
