"""Read models of a running broker (the dashboard, /metrics, the CLI): a message's life, retry
ladders, consumer and group views, store counts, rates and the delivery log."""
