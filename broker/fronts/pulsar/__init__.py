"""The Pulsar binary protocol front (issue 21): the wire codec first — frames, CRC-32C,
the protobuf commands — then the commands on the core. Not the `pulsar` client package
(that name belongs to the real client)."""
