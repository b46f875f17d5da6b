# The two commands a person types: `make demo` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench clean system-deps

# The SSH tests need a real OpenSSH server and the terminal smoke test needs tmux; as root on Debian we
# install them, otherwise those tests are skipped (CI sets SIGNOFF_SSHD_REQUIRED=1 so a missing sshd fails).
system-deps:
	@if [ ! -x /usr/sbin/sshd ] || ! command -v ssh-keygen >/dev/null || [ ! -x /usr/bin/python3 ] \
	    || ! command -v tmux >/dev/null || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing openssh-server, tmux and postgresql for the SSH, terminal and store tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      openssh-server openssh-client procps python3 tmux make postgresql >/dev/null; \
	  else echo "note: sshd, tmux or postgresql not installed; those tests will be skipped"; fi; \
	fi

$(BIN)/python:
	@$(PY) -m venv --help >/dev/null 2>&1 && $(PY) -c "import ensurepip" 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; \
	  else echo "python3 -m venv is unavailable: install python3-venv" >&2; exit 1; fi; }
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEVSTAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(STAMP)
	$(BIN)/signoff demo

# Three workers on two cores: the tests mostly wait on real servers and subprocesses. Tests that share
# a server or a once-made session carry an xdist_group and stay on one worker.
test: $(DEVSTAMP) system-deps
	$(BIN)/python -m pytest -q -n 3 --dist loadgroup

# Every benchmark, each against a reference measured in the same run, then one table of the results.
bench: $(DEVSTAMP) system-deps
	$(BIN)/python bench/table.py

lint: $(DEVSTAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .signoff
