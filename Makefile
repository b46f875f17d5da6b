# The two commands a person types: `make demo` and `make test`.
# The interpreter .venv is made from (`make PY=…` chooses another). Debian's own python3, when it is 3.11
# or newer and can make a venv (or we are root and can install python3-venv), is preferred to the first
# python3 on PATH: it is built with PGO and LTO, and the suite runs about a fifth faster on it than on a
# plain source build such as pyenv's.
ifeq ($(origin PY),undefined)
PY      := $(shell if /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
             && { /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; }; }; \
             then echo /usr/bin/python3; else echo python3; fi)
endif
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench clean system-deps llamacpp

# The SSH tests need a real OpenSSH server and the terminal smoke test needs tmux; as root on Debian we
# install them, otherwise those tests are skipped (CI sets SIGNOFF_SSHD_REQUIRED=1 so a missing sshd fails).
system-deps:
	@if [ ! -x /usr/sbin/sshd ] || ! command -v ssh-keygen >/dev/null || [ ! -x /usr/bin/python3 ] \
	    || ! command -v tmux >/dev/null || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	    || ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null \
	    || ! command -v cmake >/dev/null || ! command -v c++ >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing openssh-server, tmux, postgresql, redis and a C++ toolchain for the SSH, terminal, store and real-system tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      openssh-server openssh-client procps python3 python3-venv tmux make postgresql redis-server redis-tools \
	      cmake g++ >/dev/null; \
	  else echo "note: sshd, tmux, postgresql or redis not installed; those tests will be skipped"; fi; \
	fi

$(BIN)/python:
	@$(PY) -m venv --help >/dev/null 2>&1 && $(PY) -c "import ensurepip" 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; \
	  else echo "python3 -m venv is unavailable: install python3-venv" >&2; exit 1; fi; }
	$(PY) -m venv $(VENV)

# Editable installs in setuptools' "compat" mode: a .pth that only puts this checkout on sys.path. The
# default mode's import hook costs every Python process in the venv ~11 ms at start, and the tests start
# thousands of them (every simulated benchmark run is one). A setuptools without compat gets the default.
# uv installs the same versions from the same registry as pip, with the bytecode compiled on both cores: a fresh
# clone's `make .venv/.installed-dev` (the venv made, then everything installed) took 28 s with pip, after pip's own
# upgrade, and 12 s with uv, uv's own install included (2026-12-07). Where uv cannot be had or fails, pip does it
# as before.
define install_editable
{ $(BIN)/python -m pip install --quiet uv 2>/dev/null \
  && $(BIN)/python -m uv pip install --quiet --python $(BIN)/python --compile-bytecode -e '$(1)' -C editable_mode=compat; } \
|| { $(BIN)/python -m pip install --quiet --upgrade pip \
  && { $(BIN)/pip install --quiet -e '$(1)' --config-settings editable_mode=compat 2>/dev/null \
       || $(BIN)/pip install --quiet -e '$(1)'; }; }
endef

$(STAMP): pyproject.toml | $(BIN)/python
	$(call install_editable,.)
	touch $@

# One pip run for the tests, not two: `.[dev]` installs everything `.` does (a second resolve cost a fresh clone ~15 s).
$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(call install_editable,.[dev])
	touch $(STAMP) $@

demo: $(STAMP)
	$(BIN)/signoff demo

# Six workers on two cores: many tests wait on real servers (sshd, PostgreSQL, Redis, llama-server) or on
# a stress deadline, and more workers keep both cores busy meanwhile. The suite alone took 599 s with four
# and 552 s with six on the same quiet machine (2026-12-06). Tests that share a once-made session carry an
# xdist_group and stay on one worker; the longest are marked `heavy` and start first; the 25 slowest are
# listed at the end.
# The suite starts thousands of Python processes from this checkout; where PYTHONDONTWRITEBYTECODE is set
# (as on CI) none of them would write its compiled modules, and each would compile what it imports again
# (0.2-0.3 s of CPU for a demo run; lost in the noise of the whole suite's time, 636 s without and 638 s
# with, but never worse). compileall writes them once, whatever that variable says.
test: $(DEVSTAMP) system-deps llamacpp
	@$(BIN)/python -m compileall -q -j 0 agent tools policies tui tests bench examples >/dev/null
	$(BIN)/python -m pytest -q -n 6 --dist loadgroup --durations=25

# llama.cpp's llama-server and a small model for the LLM example (examples/llamacpp): built once, cached
# under ~/.cache/signoff (about 5 minutes on 2 cores the first time, nothing after). Without cmake and a
# C++ compiler the example's tests are skipped (CI sets SIGNOFF_LLAMACPP_REQUIRED=1 so they fail instead).
llamacpp: system-deps | $(BIN)/python
	@if command -v cmake >/dev/null && command -v c++ >/dev/null; then \
	  PYTHON=$(abspath $(BIN))/python sh examples/llamacpp/build.sh >/dev/null \
	    || echo "note: the llama.cpp build failed (above); the llama.cpp example's tests will be skipped"; \
	else echo "note: cmake or a C++ compiler missing; the llama.cpp example's tests will be skipped"; fi

# Every benchmark, each against a reference measured in the same run, then one table of the results.
# Compiled first, as make test does: where PYTHONDONTWRITEBYTECODE is set, a module edited since its last compile is
# compiled again by every process that imports it, and the start-up rows measured that (sessions 403 → 273 ms).
bench: $(DEVSTAMP) system-deps
	@$(BIN)/python -m compileall -q -j 0 agent tools policies tui tests bench examples >/dev/null
	$(BIN)/python bench/table.py

# basedpyright -p .: this checkout's pyproject.toml. Left to search, it takes a pyrightconfig.json in any parent
# directory first (a stray one in /tmp failed a fresh clone there, ci108).
lint: $(DEVSTAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/basedpyright -p .

clean:
	rm -rf $(VENV) .signoff
