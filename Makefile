# The two commands of the README: `make run` and `make test` (and `make quick`, the tests that
# need no server).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
RUN_STAMP := $(VENV)/.run-installed
TEST_STAMP := $(VENV)/.test-installed
SYSTEM_STAMP := $(VENV)/.system-installed

.PHONY: run test quick lint typecheck suite install install-test system-deps eval bench cluster clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet -e .
	touch $@

# torch first: pip takes the CPU build that lies on this machine's disk.
$(TEST_STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[dev,local]'
	touch $(RUN_STAMP) $@

# Debian packages the suite drives: headless Chromium for the console/viewer pages, wrk,
# libfaketime.
$(SYSTEM_STAMP):
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing: browser tests will be skipped"; fi; fi
	@command -v wrk >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq wrk >/dev/null || true; }
	@# libfaketime: the clock-skew tests run workers whose wall clock is off (tests/faults/skew.py).
	@ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq libfaketime >/dev/null || true; }
	touch $@

# The cross-language test's Node.js caller (npm `nats`, no SDK of ours).
NODE_STAMP := tests/xlang/node_modules/.installed
$(NODE_STAMP): tests/xlang/package.json
	@if command -v npm >/dev/null 2>&1; then cd tests/xlang && npm install --no-audit --no-fund --silent && touch node_modules/.installed; \
	else echo "npm missing: the Node.js cross-language test will be skipped"; fi

# The unmodified upstream clients (hook scripts, MCP shim) the compatibility tests run.
UPSTREAM_STAMP := tests/upstream/node_modules/.installed
$(UPSTREAM_STAMP): tests/upstream/install.sh
	@if command -v npm >/dev/null 2>&1; then bash tests/upstream/install.sh && touch $@; \
	else echo "npm missing: the upstream-client tests will be skipped"; fi

# The coding agents' own CLIs (Claude Code, Codex, Gemini CLI, Qwen Code, OpenCode, Droid,
# Copilot CLI): the connect and plugin tests run their config readers and validators.
AGENT_CLIS_STAMP := tests/agents_cli/node_modules/.installed
$(AGENT_CLIS_STAMP): tests/agents_cli/package.json
	@if command -v npm >/dev/null 2>&1; then cd tests/agents_cli && npm install --no-audit --no-fund --silent && touch node_modules/.installed; \
	else echo "npm missing: the agent CLI checks will be skipped"; fi

install: $(RUN_STAMP)
install-test: $(TEST_STAMP) $(SYSTEM_STAMP) $(NODE_STAMP) $(UPSTREAM_STAMP) $(AGENT_CLIS_STAMP)

run: install
	$(PY) -m engine run --config config/engine.yaml

# Three NATS nodes (JetStream R3) and the product on three simulated hosts, on loopback:
# REST on :3111, :3211, :3311 (ops/cluster, docs/DEPLOY.md). Ctrl-C stops it in order.
cluster: install
	$(PY) -m ops.cluster

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install-test
	$(VENV)/bin/mypy

# The whole suite, test modules spread over parallel workers (tests/fixtures.py: every test
# has its own ports and temp dirs; a module, or a folder sharing a stack, is one unit).
# The product's bytecode is compiled first: the suite starts ~800 worker and engine
# processes, which would each compile what they import when PYTHONDONTWRITEBYTECODE is set.
PYTEST_WORKERS ?= 3
suite: install-test
	$(PY) -m compileall -q engine functions triggers workers ops
	$(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder

test: lint typecheck suite

# The tests that need no server (marked `unit`: no nats-server, engine, worker, browser or
# node), for the edit-and-test loop; on two workers.
quick: $(TEST_STAMP)
	$(VENV)/bin/pytest -q -m unit -n 2

eval: install-test
	$(PY) ops/eval/locomo.py --cv

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
