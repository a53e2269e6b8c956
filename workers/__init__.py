"""fabric's RQ side: job functions (`jobs`), the reconciler and the worker entry point (`run`)."""
