"""The official generated apache.rocketmq.v2 stubs, from the rocketmq-python-client
package (rocketmq.grpc_protocol), imported without running that package's __init__.

Why: the package's __init__ starts the 5.x *client* — among other things it creates
~/logs/rocketmq_python and points a file logger there — and a broker process must not
write into its user's home. One copy of the stubs per process (a second generated copy
clashes in protobuf's descriptor pool), so a client used in the same process (a test
beside an in-process broker) gets these very modules: ``from rocketmq import Producer``
then runs the real __init__ on first use (the module's __getattr__ below).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys

__all__ = ["pb", "spb", "service_grpc"]


def _bare_package() -> None:
    if "rocketmq" in sys.modules:
        return
    spec = importlib.util.find_spec("rocketmq")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError("No module named 'rocketmq' (the rocketmq-python-client package of the grpc extra)")
    package = importlib.util.module_from_spec(spec)          # created, not executed

    def __getattr__(name: str):
        # the first name the stubs do not provide: load the client's __init__ once
        if package.__dict__.pop("__getattr__", None) is None:
            raise AttributeError(name)
        spec.loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = __getattr__
    sys.modules["rocketmq"] = package


_bare_package()
pb = importlib.import_module("rocketmq.grpc_protocol.definition_pb2")
spb = importlib.import_module("rocketmq.grpc_protocol.service_pb2")
service_grpc = importlib.import_module("rocketmq.grpc_protocol.service_pb2_grpc")
