"""Workload layer: what is fed to the model (model zoo, user models, shape ladder, batch list, inputs)."""
