"""BrokerCore's typed API beyond the operations (broker/CORE_API.md), grouped by what a
front asks: the name server and the admin's reads and changes (admin.py), the read
models of the dashboard and the metrics and a broker's dead letters (views.py),
Pulsar's cursors, topics and producers (pulsar.py), Pulsar's REST admin (pulsar_admin.py).
Each is a mixin of BrokerCore whose methods delegate, in one line, to the service or
read model behind it: fronts and the SDK call these, never a service. What spans
several brokers (a message's life, the groups, a re-drive) and the typed values it
gives: across.py, module functions over a list of cores."""
from .admin import AdminDoor
from .pulsar import PulsarDoor
from .pulsar_admin import PulsarAdminDoor
from .views import ViewsDoor

__all__ = ["AdminDoor", "PulsarAdminDoor", "PulsarDoor", "ViewsDoor"]
