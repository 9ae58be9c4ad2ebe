# The README's two commands: `make run` and `make test`. Both set everything up first.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
# The stamp is keyed on the dependency list: re-running with nothing changed is a no-op.
DEPS_KEY := $(shell cat pyproject.toml | sha256sum | cut -c1-16)
STAMP  := $(VENV)/.installed-$(DEPS_KEY)
# Python keeps its bytecode (`__pycache__`, git-ignored) even where the environment says not
# to (PYTHONDONTWRITEBYTECODE, set on this project's machines): `make test` starts ~2,000
# Python processes, and each compiled etu's modules, the tests' and the runner build's
# codegen scripts from source again (measured: 12 % of the CPU of the CLI tests).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup python-env system-deps run test test-all demo bench screenshots lint clean fuzz

# The Python environment and the Debian packages side by side (neither needs the other): on
# a fresh machine the packages take ~70 s, mostly downloads and dpkg, the environment ~45 s.
setup:
	@$(MAKE) --no-print-directory -j2 python-env system-deps

python-env: $(STAMP)
	@:

# Debian's packages for the tests and the real runner build, installed only when missing.
system-deps:
	@sh tools/system_deps.sh

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	# CPU build of torch from the machine's local wheel (any other spec pulls CUDA, see DEVELOPERS.md).
	# --no-compile: pip byte-compiles every module it installs on one core (~18,000, ~50 s
	# of the setup). tools/warm_bytecode.py writes the bytecode of the ~4,400 that etu, its
	# compile path and its tests import, the stacks side by side (18 s against compileall's
	# 33 s on 2 cores); the rest compile on first use, if any.
	$(BIN)/python -m pip install --quiet --no-compile torch==2.13.0
	@# The rest through uv, which downloads and unpacks in parallel (31 -> 6 s): torch is
	@# installed already and satisfies the pin, so uv, which does not see the local wheel,
	@# keeps it. pip stays the fallback where uv cannot run.
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[compile,dev,lab]' || \
	  $(BIN)/python -m pip install --quiet --no-compile -e '.[compile,dev,lab]'
	$(BIN)/python -m tools.warm_bytecode
	@rm -f $(VENV)/.installed-*
	@touch $@

# The console on the demo workspace, as `etu` and `etu serve` open it: with no Arm FVP on this
# machine its Run tab uses the etu stand-in FVP (simulated numbers, and the console says so;
# ETU_FVP_DIR or an FVP on PATH takes precedence), and the real runner's source comes from the
# project's mirror, ../shared/vendor/, as in CI (etu.fvp.standin, etu.runner.runtime_source).
run: setup
	$(BIN)/etu

# Three workers on two cores: many tests wait on processes, ptys and QEMU, so a third worker
# fills the waits (measured: the CPU was 121 % busy with two); a fourth only adds contention
# (a fresh clone, Nov 2026: 15:21 and 1,783 CPU-s with three, 15:55 and 1,961 with four).
# Each worker takes whole modules (their fixtures are set up once), longest first as a fresh
# clone's run measured them (tests/durations.py), so the run ends on short modules.
# The slowest 30 are printed.
TEST_WORKERS ?= 3
TEST_DIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: setup
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(TEST_DIST) -m "not npu_matrix" --durations=30

# Everything, with the NPU model's whole configuration matrix (ten more lowered programs).
test-all: setup
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(TEST_DIST) --durations=30

demo: setup
	$(BIN)/python etu_tui/demo/build_demo.py
	$(BIN)/python etu_tui/demo/build_firmware.py
	$(BIN)/python etu_tui/demo/build_real_runner.py

# toolong (measured beside the Run tab in bench_console_big_session) pins textual < 0.59, so it
# gets its own venv rather than a `bench` extra that would downgrade the console's textual.
TOOLONG_VENV := .bench-toolong
$(TOOLONG_VENV)/bin/tl:
	python3 -m venv $(TOOLONG_VENV)
	$(TOOLONG_VENV)/bin/pip install -q "toolong==1.5.0"

bench: setup $(TOOLONG_VENV)/bin/tl
	$(BIN)/python benchmarks/run_all.py

# Long fuzzing run: each format's harness for FUZZ_SECONDS under atheris (hypothesis when
# atheris does not install); findings land in tests/data/fuzz/<format>/ as regression inputs.
FUZZ_SECONDS ?= 300
FUZZ_FORMATS ?= program payload vela_summary vela_per_layer vela_debug vela_stdout elf ld_map \
	linker_script runner_log session
fuzz: setup
	-$(BIN)/python -m pip install --quiet -e '.[fuzz]' 2>/dev/null || \
	  echo "make: atheris did not install; fuzzing with hypothesis"
	@for f in $(FUZZ_FORMATS); do \
	  echo "== fuzz $$f ($(FUZZ_SECONDS) s)"; \
	  $(BIN)/python -m tests.fuzzing $$f $(FUZZ_SECONDS) || exit 1; \
	done

screenshots: setup
	$(BIN)/python -m tools.screenshots screenshots/

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
