"""The RocketMQ 5.x front (apache.rocketmq.v2 over gRPC): conversions and the calls, on the core."""
