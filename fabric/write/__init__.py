"""The write path: durable intake, then placement in a worker."""
