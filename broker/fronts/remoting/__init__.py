"""RocketMQ 4.x remoting: the codec (protocol/), the request processors, the front, the
TCP listener."""
