# syntax=docker/dockerfile:1.7
# Runs the memory-regression suite on a GPU host with the patched wheel.
#
#   docker build -f docker/suite.Dockerfile -t remat-suite .   # wheel in dist/
#   docker run --rm --gpus all remat-suite
#
# (scripts/run_suite.py runs exactly these.) The CUDA libraries come from the
# wheel's [and-cuda] extra; the driver from the host.
ARG BASE_IMAGE=ubuntu:24.04@sha256:d1e2e92c075e5ca139d51a140fff46f84315c0fdce203eab2807c7e495eff4f9
FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates graphviz make python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /work
COPY dist/ /wheels/
COPY pyproject.toml README.md Makefile ./
COPY src/ src/
COPY models/ models/
COPY tests/ tests/
RUN python3 -m venv .venv \
    && wheel="$(ls /wheels/tensorflow-*.whl)" \
    && .venv/bin/pip install --no-cache-dir "${wheel}[and-cuda]" \
    && .venv/bin/pip install --no-cache-dir -e ".[dev]"
CMD [".venv/bin/pytest", "-m", "gpu", "-ra", "tests"]
