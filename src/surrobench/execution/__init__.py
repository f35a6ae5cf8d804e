"""Execution layer: how the model runs (device, precision, mode, eval + inference_mode or no_grad, timing, memory)."""
