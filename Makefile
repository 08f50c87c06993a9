# make demo: bootstrap .venv, build the engine, run the ResNet-20 demo.
# make test: the whole suite (bootstraps the same way).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TF_DIR = $(shell $(BIN)/python -c 'import os, importlib.util as u; print(os.path.dirname(u.find_spec("tensorflow").origin))')

.PHONY: all venv engine demo test lint clean

all: engine

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(STAMP)

engine: $(STAMP)
	$(BIN)/cmake -S tools/hlo_remat -B build/engine -G Ninja \
	  -DCMAKE_MAKE_PROGRAM=$(abspath $(BIN))/ninja \
	  -DTF_DIR=$(TF_DIR) -DCMAKE_INSTALL_PREFIX=$(abspath $(VENV)) >/dev/null
	$(BIN)/cmake --build build/engine -j 2
	$(BIN)/cmake --install build/engine >/dev/null

demo: engine
	$(BIN)/remat-harness demo

lint: $(STAMP)
	$(BIN)/ruff check src tests models scripts
	$(BIN)/ruff format --check src tests models scripts

test: engine
	$(BIN)/ruff check src tests models scripts
	$(BIN)/pytest -ra

clean:
	rm -rf build .cache reports
