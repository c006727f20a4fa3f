"""HTTP: the dashboard, Prometheus /metrics, /healthz."""
