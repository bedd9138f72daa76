"""Probes turn a live training run into the doctor's statistics. Only probes touch PyTorch (or the engine)."""
