"""The MQTT bridge (aiomqtt)."""
