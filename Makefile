# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# Python: the newest supported python3.X that runs here, unless PYTHON= names one.
SUPPORTED_PYTHONS := 3.13 3.12 3.11
PYTHON ?= $(firstword $(foreach v,$(SUPPORTED_PYTHONS),$(shell python$(v) -c '' 2>/dev/null && echo python$(v))))
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: run dev test lint format bench soak soak-hosts scale servers clean image-test release

$(BIN)/python:
	@if [ -z "$(PYTHON)" ]; then echo "No supported Python found: install Python 3.11, 3.12 or 3.13 (or name one with PYTHON=)" >&2; exit 1; fi
	@$(PYTHON) -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 13) else 1)' || { echo "$(PYTHON) is not a supported Python: use 3.11, 3.12 or 3.13" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# --no-compile: Python compiles a module when it is first imported, which is a small part of
# what pip would compile (every module of every package, Django's many unused ones too).
$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements-test.txt $(VENV)/.runtime
	$(BIN)/pip install --quiet --disable-pip-version-check --no-compile -r requirements-dev.txt
	touch $@

# The home server (docs/self-hosting.md): gunicorn, SQLite in data/, tasks and their schedule
# in-process, on every interface (HOST= narrows it) at PORT. `exec`: the shell becomes the
# server, so make (and Ctrl+C) returns only once it has stopped and closed the database: a
# restore may follow at once.
run: $(VENV)/.runtime
	@PORT=$(PORT) exec $(BIN)/python manage.py serve

# For people changing the code: Django's development server with DEBUG, on this machine only.
dev: export DEBUG ?= true
dev: $(VENV)/.runtime
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py ensure_staff
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

# PostgreSQL and Redis server binaries for the tests, from Debian's packages when missing;
# nginx and Caddy check the proxy blocks of docs/self-hosting.md (tests/docs).
servers:
	@./scripts/install-servers.sh nginx caddy

# The slices that run a second time through PgBouncer in transaction mode, with real workers
# (docs/operations.md, "PgBouncer"): what a large deployment puts between the service and
# PostgreSQL. --reuse-db: the pooler keeps server connections to the test database open. With
# the fast path off (docs/fast-path.md): the API suites and the session, lockout and app password
# tests through the views alone, as the rest of the suite runs them through the fast path.
POOLED_SLICE := tests/subscriptions tests/gpodder tests/episodes tests/deletions tests/nextcloud \
	tests/web/test_data.py tests/e2e/test_deletion_worker.py tests/e2e/test_feed_check_worker.py \
	tests/fastpath tests/accounts/test_sessions.py tests/accounts/test_lockout.py \
	tests/accounts/test_app_passwords.py tests/factors/test_two_steps.py

# The suites that run a second time on SQLite under the home server's settings (make run's).
HOME_SLICE := tests/subscriptions tests/gpodder tests/episodes tests/nextcloud tests/imports tests/web tests/staff \
	tests/mail tests/fastpath tests/inactivity tests/factors/test_two_steps.py \
	tests/factors/test_passkeys_setting.py tests/accounts/test_activity.py

# What neither slice above runs: the API's platform suite, the home server's start, the
# migrations. The home slice runs them too, on SQLite; each other supported Python found here
# that is not the home slice's runs them on PostgreSQL (scripts/test-slices.sh).
PYTHONS_SLICE := tests/api tests/home tests/accounts/test_migrations.py

# The whole suite in two processes (pytest-xdist), naming its 15 slowest tests, and at the same
# time lint and the slices above on the other supported Pythons, each as soon as its venv is
# made (scripts/test-slices.sh), each process with its own PostgreSQL, Redis, ports and database
# (tests/conftest.py). Bytecode is written (a shell
# that sets PYTHONDONTWRITEBYTECODE made every process, servers and workers included, compile the
# project and pytest rewrite every test module again).
test: export PYTHONDONTWRITEBYTECODE :=
test: $(BIN)/python
	MAKE="$(MAKE)" VENV="$(VENV)" POOLED_SLICE="$(POOLED_SLICE)" HOME_SLICE="$(HOME_SLICE)" \
		PYTHONS_SLICE="$(PYTHONS_SLICE)" ./scripts/test-slices.sh $(BIN)/python

# The image and both compose layouts built and run with podman (docs/containers.md, "Testing the
# image"): podman and a local Debian base image made first when missing, the home server synced
# with, the full layout through a deletion and a restart. A few minutes; plain pytest skips them.
image-test: $(VENV)/.dev
	./tests/containers/prepare.sh
	$(BIN)/pytest -p no:cacheprovider -m containers tests/containers

# A release (docs/containers.md, "Releases"): pyproject.toml's version checked against
# CHANGELOG.md, the tree and the tags, then HEAD tagged v<version>, annotated; nothing is pushed.
release: $(BIN)/python
	@$(BIN)/python scripts/release.py

# Style, types, and the dependency rule between the apps (docs/architecture.md).
lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports

format: $(VENV)/.dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(VENV)/.dev
	@./scripts/install-servers.sh wrk nginx php
	$(BIN)/python bench/run.py

# Every endpoint for SOAK_SECONDS (900), the database and Redis restarted on the way (bench/README.md).
soak: $(VENV)/.dev
	@./scripts/install-servers.sh
	$(BIN)/python bench/soak.py

# Two web hosts behind nginx, PgBouncer, two workers (one with beat), one host killed on the way
# (HOSTS_SECONDS of load, 120): each promise of "Scaling out" checked across hosts (bench/README.md).
soak-hosts: $(VENV)/.dev
	@./scripts/install-servers.sh nginx
	$(BIN)/python bench/hosts.py

# A million accounts (x SCALE, 1) loaded with COPY, every hot request timed against the same
# accounts of a 1,000-account database, and the plans of every request, admin list and sweep.
# About 30 minutes and 35 GB of disk at its peak at SCALE=1 (bench/README.md).
scale: $(VENV)/.dev
	@./scripts/install-servers.sh
	$(BIN)/python bench/scale.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
