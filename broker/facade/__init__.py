"""BrokerCore's typed API beyond the operations (broker/CORE_API.md), grouped by what a
front asks: the name server and the admin's reads and changes (admin.py), the read
models of the dashboard and the metrics (views.py), Pulsar's cursors, topics and
producers (pulsar.py). Each is a mixin of BrokerCore whose methods delegate, in one
line, to the service behind it: fronts and the SDK call these, never a service."""
from .admin import AdminDoor
from .pulsar import PulsarDoor
from .views import ViewsDoor

__all__ = ["AdminDoor", "PulsarDoor", "ViewsDoor"]
