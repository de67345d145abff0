"""Pull syncing: interval sets of what has been synced (pure) and the upstream/downstream sync services."""
