"""client-go's informer machinery: reflector, indexer, shared informer. Private to `reconcilekit.cache`."""
