"""RocketMQ's model in the core: topics and groups with their journaled configs, sending and
send-back, pulling and held pulls, the delay queue, 5.x invisible time, transactions,
committed offsets and dead letters."""
