# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint format bench soak soak-hosts scale servers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

# The embedded default: SQLite in data/, tasks in-process, development settings.
run: export DEBUG ?= true
run: $(VENV)/.runtime
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py sweep_deletions --all
	$(BIN)/python manage.py ensure_staff
	@echo ""
	@echo "  Your pages: http://$(HOST):$(PORT)/  (sign in with the staff account above, or any account)"
	@echo "  API root:  http://$(HOST):$(PORT)/v1/"
	@echo "  API docs:  http://$(HOST):$(PORT)/v1/docs/"
	@echo "  Admin:     http://$(HOST):$(PORT)/admin/  (log in with the staff account above)"
	@echo "  Token:     curl -X POST http://$(HOST):$(PORT)/v1/auth/login \\"
	@echo "               -H 'Content-Type: application/json' -d '{\"username\": \"admin\", \"password\": \"...\"}'"
	@echo ""
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# PostgreSQL and Redis server binaries for the tests, from Debian's packages when missing.
servers:
	@./scripts/install-servers.sh

# The slices that run a second time through PgBouncer in transaction mode, with real workers
# (docs/operations.md, "PgBouncer"): what a large deployment puts between the service and
# PostgreSQL. --reuse-db: the pooler keeps server connections to the test database open.
POOLED_SLICE := tests/subscriptions tests/gpodder tests/episodes tests/deletions tests/nextcloud \
	tests/web/test_data.py tests/e2e/test_deletion_worker.py tests/e2e/test_feed_check_worker.py

test: lint servers
	$(BIN)/pytest
	DATABASE_POOL_MODE=transaction TEST_PGBOUNCER=1 $(BIN)/pytest --reuse-db $(POOLED_SLICE)

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
	@./scripts/install-servers.sh wrk
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
