# idempotent-messaging — every target installs what it needs into .venv from requirements.lock.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The pip every venv of the project (and of its install tests) runs: the one python3 -m venv
# bundles (23.2 with Python 3.11.7) spends about 4x the CPU on PyPI's large index pages
# (botocore, pulumi-aws) for the same resolution.
PIP_VERSION := 26.3
# The locked set is installed by uv (pinned; pip installs it into .venv): the lock pins every
# version, so nothing is resolved, and uv downloads in parallel and unpacks about ten times
# faster than pip (measured here on a cold cache: 8 s against 45 s for the 121 packages). Like
# pip with `--no-compile`, it compiles nothing at install: pulumi-aws ships about 1 GB of
# modules and a program imports a few dozen. uv reads no pip configuration: behind a mirror,
# set UV_DEFAULT_INDEX as you would PIP_INDEX_URL.
UV_VERSION := 0.13.9
# Stages: one per Pulumi.<stage>.yaml, so a new stage is one new file. A stack file that points
# the provider at a local emulator (sets aws:endpoints, e.g. Pulumi.localstack.yaml) is a local
# target, not a stage: CI can neither preview nor deploy it. tests/stages.py applies the same rule.
STACKS := $(sort $(patsubst Pulumi.%.yaml,%,$(shell grep -L '^ *aws:endpoints:' Pulumi.*.yaml)))

# Every Python process a target starts writes its bytecode (.pyc, in .venv and the ignored
# __pycache__ directories) even where the environment sets PYTHONDONTWRITEBYTECODE: the suite
# starts well over a hundred Python processes (the CLIs, emulator runs, the pack's server), and
# each would compile pulumi, the provider's modules, botocore and moto from source again.
# Measured here: an offline check of the dev stack costs 4.5 s of CPU without .pyc files, 2.0 s
# with them; pytest's assertion rewriting is cached the same way.
unexport PYTHONDONTWRITEBYTECODE

.DEFAULT_GOAL := help
.PHONY: help install lint test unit policy stacks docs demo bench bench-chart run-month dist lock clean

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.lock pyproject.toml
	@echo "== install: .venv from requirements.lock (about half a minute on a fresh machine)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -qq --disable-pip-version-check pip==$(PIP_VERSION) uv==$(UV_VERSION)
	$(BIN)/uv pip install -q --python $(BIN)/python -r requirements.lock
	$(BIN)/python -m pip install -qq --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

install: $(STAMP) ## Create .venv, install the locked dependencies and this package (editable)

lint: install ## ruff (lint + format check), mypy, import-layer contracts, workflow linters (actionlint, zizmor)
	$(BIN)/actionlint .github/workflows/*.yml
	# zizmor offline (no GitHub API here or in CI's lint job): every finding of medium severity
	# or more fails, high ones included (unpinned actions, template injection, ...).
	$(BIN)/zizmor --offline --min-severity medium .github/workflows
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/mypy policy/__main__.py  # the pack directory: a `__main__` of its own, as the CLI runs it
	for e in examples/*/; do $(BIN)/mypy $$(find $$e -name '*.py' -not -path '*/venv/*') || exit $$?; done
	$(BIN)/lint-imports

stacks: ## Print the stages (every Pulumi.<stage>.yaml that deploys to AWS)
	@echo $(STACKS)

policy: install ## Offline policy check of every stage, as `pulumi up` and as `pulumi preview`
	@for s in $(STACKS); do \
	  for m in "" "--preview"; do \
	    echo "== policy check: stack $$s $${m:-(up)}"; \
	    $(BIN)/python -m idempotent_messaging.offline --project . --stack $$s $$m || exit $$?; \
	  done; \
	done

docs: install ## Regenerate docs/policy.md's rule table (from the rules) and docs/bench.md's tables and cost chart (from bench/results.json)
	$(BIN)/python -m idempotent_messaging.rules.catalogue --write docs/policy.md
	$(BIN)/python -m bench.readme
	$(BIN)/python -m bench.chart

test: install ## The whole suite: lint and the policy check side by side, then pytest (under 10 minutes on 2 cores, install included)
	@# (Run beside pytest instead, lint and the check saved no time: pytest's workers leave
	@# the cores little idle time to fill; measured on a fresh clone.)
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint policy
	@$(MAKE) --no-print-directory pytest

.PHONY: pytest
pytest: install ## pytest alone: the whole suite, one worker per core (about 8 minutes on 2 cores)
	@echo "== pytest: the whole suite, one worker per core"
	$(BIN)/python -m pytest -q -n auto --dist worksteal --durations=10

demo: install ## The main job: deploy the dev stack onto an embedded AWS emulator and drive traffic (KEEP=1 keeps it running)
	$(BIN)/python -m idempotent_messaging.local.demo --stack dev $(if $(KEEP),--keep,)

bench: install ## Benchmarks against the embedded emulator; writes bench/results.json (QUICK=1: small sizes)
	$(BIN)/python -m bench $(if $(QUICK),--quick,)

bench-chart: install ## Draw docs/bench-cost.svg (where each implementation's $ goes) and its table in docs/bench.md from bench/results.json
	$(BIN)/python -m bench.chart

run-month: install ## Invoke the monthly dispatcher: make run-month MONTH=YYYY-MM [STACK=dev] [TARGET=aws|emulator]
	@test -n "$(MONTH)" || { echo "usage: make run-month MONTH=YYYY-MM [STACK=dev] [TARGET=aws|emulator]"; exit 2; }
	$(BIN)/python -m idempotent_messaging.ops run-month --month $(MONTH) --stack $(or $(STACK),dev) --target $(or $(TARGET),aws)

dist: install ## Build the wheel and the sdist of idempotent-messaging into dist/
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

lock: ## Re-resolve requirements.lock from pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet pip-tools
	@# The indexes and find-links of the machine that locks are its own, not the project's.
	$(BIN)/pip-compile --quiet --extra dev --strip-extras --no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml

clean: ## Remove .venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info

.PHONY: fuzz
fuzz: install ## Coverage-guided fuzzing of the consumer runtime (atheris): FUZZ_SECONDS=300
	mkdir -p .fuzz/corpus && cp -n tests/fuzz/seeds/* .fuzz/corpus/
	$(BIN)/python -m tests.fuzz.runtime_target .fuzz/corpus -max_total_time=$(or $(FUZZ_SECONDS),300) -max_len=300000 -artifact_prefix=.fuzz/

.PHONY: snapshot
snapshot: install ## Regenerate tests/infra/snapshots/ (every stack's recorded resources, up and preview)
	$(BIN)/python -m tests.infra.snapshot --write

.PHONY: kms-paths
kms-paths: install ## Every key x queue x topic x placement x table combination of the components' roles (make test runs a sample)
	KMS_PATHS=full $(BIN)/python -m pytest -q -p no:cacheprovider tests/infra/test_kms_paths.py

.PHONY: crash-check
crash-check: install ## Every placement x queue x publish and quarantine fault at every crash point (make test runs a sample)
	ENUMERATION=full $(BIN)/python -m pytest -q -p no:cacheprovider -n auto tests/integration/test_runtime_enumeration.py

.PHONY: model-check
model-check: install ## The redelivery protocol model-checked at the larger bound (docs/model.md; make test runs the small one)
	$(BIN)/python -m tests.model --bound large

.PHONY: soak
soak: install ## The reference stack under load with a seeded fault schedule and a per-event checker (SEED=N EVENTS=N; not part of make test)
	$(BIN)/python -m idempotent_messaging.local.soak $(if $(SEED),--seed $(SEED),) $(if $(EVENTS),--events $(EVENTS),)
