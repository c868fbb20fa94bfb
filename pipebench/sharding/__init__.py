"""Multi-worker input sharding measured on a local cluster (`pipebench sharding RUN_DIR`)."""
