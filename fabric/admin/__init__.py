"""Admin operations over an org's tree: replay, source invalidation, stats. Each takes a connection
(and the settings or embedder it needs) from `Fabric`; none imports the API."""
