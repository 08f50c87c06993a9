# syntax=docker/dockerfile:1.7
# Runs the memory-regression suite on a GPU host with the patched wheel.
#
#   python3 scripts/run_suite.py --wheels dist    # builds and runs this image
#
# Needs on the host: an NVIDIA driver for the GPU (CUDA 12 capable) and the
# NVIDIA Container Toolkit (`docker run --gpus all`). The CUDA libraries come
# from the wheel's [and-cuda] extra. The Python is the wheel's: the same
# PYTHON_VERSION build arg as docker/Dockerfile and scripts/build_wheel.py
# (tests/test_docker_files.py holds them equal); Ubuntu 24.04 ships 3.12.
ARG BASE_IMAGE=ubuntu:24.04@sha256:d1e2e92c075e5ca139d51a140fff46f84315c0fdce203eab2807c7e495eff4f9
FROM ${BASE_IMAGE}
ARG PYTHON_VERSION=3.12
ARG DEBIAN_FRONTEND=noninteractive
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# g++ and make build the engine (hlo-remat) against the wheel's XLA headers;
# graphviz renders the DOT dumps the tests read.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates g++ graphviz make \
        "python${PYTHON_VERSION}" "python${PYTHON_VERSION}-venv" \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /work
# The wheel directory is a build context of its own (--build-context wheels=DIR),
# so any folder works, not only dist/. (hadolint knows only stage aliases.)
# hadolint ignore=DL3022
COPY --from=wheels tensorflow-*.whl /wheels/
COPY pyproject.toml README.md Makefile ./
COPY src/ src/
COPY models/ models/
COPY tests/ tests/
COPY patch_src/ patch_src/
COPY tools/ tools/
COPY scripts/ scripts/
RUN "python${PYTHON_VERSION}" -m venv .venv \
    && wheel="$(ls /wheels/tensorflow-*.whl)" \
    && .venv/bin/pip install --no-cache-dir "${wheel}[and-cuda]" \
    && .venv/bin/pip install --no-cache-dir -e ".[dev]" \
    && touch .venv/.installed \
    && make engine
# Results land in /work/reports: mount a host folder there (run_suite.py does).
ENV REMAT_REPORTS_DIR=/work/reports
# REMAT_GPU_TARGET (an embedded GPU spec, hlo-remat --list-gpu-targets) is
# passed in with -e; the tests default to h100_sxm.
CMD [".venv/bin/pytest", "-m", "gpu", "-ra", "tests"]
