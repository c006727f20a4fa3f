"""rocketmq-emulator."""
