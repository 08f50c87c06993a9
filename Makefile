# make demo: bootstrap .venv, build the engine, run the ResNet-20 demo.
# make test: the whole suite (bootstraps the same way).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TF_DIR = $(shell $(BIN)/python -c 'import os, importlib.util as u; print(os.path.dirname(u.find_spec("tensorflow").origin))')

.PHONY: all venv system-deps engine demo test lint format sweep heuristics patch clean fuzz

all: engine

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(STAMP)

# Only the tests need these: Graphviz renders the DOT dumps (the tests render
# them); GoogleTest (with its CMake config) builds the C++ unit tests.
# Debian/Ubuntu. `make demo` needs nothing from apt: the `optimal` algorithm's
# MILP solver is HiGHS from the highspy wheel.
system-deps:
	@if ! command -v dot >/dev/null || ! dpkg -s libgtest-dev libgmock-dev >/dev/null 2>&1; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends \
	    graphviz googletest libgtest-dev libgmock-dev; \
	fi

engine: $(STAMP)
	$(BIN)/cmake -S tools/hlo_remat -B build/engine -G Ninja \
	  -DCMAKE_MAKE_PROGRAM=$(abspath $(BIN))/ninja \
	  -DTF_DIR=$(TF_DIR) -DCMAKE_INSTALL_PREFIX=$(abspath $(VENV)) >/dev/null
	$(BIN)/cmake --build build/engine -j 2
	$(BIN)/cmake --install build/engine >/dev/null

demo: engine
	$(BIN)/remat-harness demo

CXX_SOURCES = $(wildcard patch_src/*.cc patch_src/*.h tools/hlo_remat/*.cc tools/hlo_remat/*.h \
  tools/hlo_remat/test_shim/xla/hlo/testlib/*.h)

lint: $(STAMP)
	$(BIN)/ruff check src tests models scripts
	$(BIN)/ruff format --check src tests models scripts
	$(BIN)/clang-format --dry-run --Werror $(CXX_SOURCES)
	$(BIN)/python scripts/check_function_length.py
	$(BIN)/python scripts/check_include_cycles.py
	$(BIN)/python scripts/check_flag_names.py

# Google style, as XLA (.clang-format); `make lint` checks it.
format: $(STAMP)
	$(BIN)/clang-format -i $(CXX_SOURCES)
	$(BIN)/ruff format src tests models scripts

# system-deps first: the engine build looks for GoogleTest when configured.
# pytest runs the test files on PYTEST_WORKERS processes (most of a test is an
# engine or TensorFlow subprocess): 2 cores, 10.6 -> 6.4 min. The files go
# out in tests/conftest.py's order, longest first (LONGEST_FIRST), not
# xdist's (most tests first), which left test_gpu_zoo.py running alone for
# the last 100 s.
PYTEST_WORKERS ?= 2
test: system-deps engine
	$(BIN)/ruff check src tests models scripts
	$(BIN)/ctest --test-dir build/engine --output-on-failure --no-tests=error -j 2
	$(BIN)/pytest -ra -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# ResNet-20 and ResNet-56, auto-jit and whole-step, every algorithm at
# 80..30% budgets on CPU: reports/sweep/{results.jsonl,table.md,*.png}.
sweep: engine
	$(BIN)/remat-harness sweep --models 20,56 --modes jit,autojit

# The heuristics table of issue 3: reports/heuristics/.
heuristics: engine
	$(BIN)/python scripts/heuristics_table.py

patch: $(STAMP)
	$(BIN)/python scripts/make_patch.py

clean:
	rm -rf build .cache reports

# Long fuzz campaign (issue 18): 10,000 mutants of the bundled and cached
# modules and 200 random training steps; reproducers in reports/fuzz/findings.
FUZZ_SEED ?= 1
fuzz: engine
	$(BIN)/remat-harness fuzz --mutants 10000 --steps 200 --seed $(FUZZ_SEED)
