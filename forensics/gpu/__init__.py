"""GPU telemetry: the NVML gate (`nvml`) and the crash-safe sampler (`sampler`)."""
