"""Pulsar's model in the core: names, topics and partitions, producers, subscriptions
(cursors, redelivery counts, delayed delivery), compaction and the admin operations."""
