"""Harness around the rematerialization engine: produce HLO from real models,
run `hlo-remat` on it, and tabulate what each heuristic does."""
