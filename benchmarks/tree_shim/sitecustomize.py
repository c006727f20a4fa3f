"""Imported at interpreter start when this directory is on PYTHONPATH: with $TREE set,
``rocketmq_emulator.<package>`` is imported from that checkout instead of the installed
one, so a benchmark can run another version of the project (e.g. a ``git worktree`` of
the commit before a change) in a subprocess, beside this one."""
import importlib.util
import os
import sys

_ROOT = os.environ.get("TREE")
_PACKAGES = {"broker", "client_sdk", "delay_scheduler", "spark_analytics", "store"}


class _TreeFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        parts = name.split(".")
        if len(parts) == 2 and parts[0] == "rocketmq_emulator" and parts[1] in _PACKAGES:
            where = os.path.join(_ROOT, parts[1])
            return importlib.util.spec_from_file_location(name, os.path.join(where, "__init__.py"),
                                                          submodule_search_locations=[where])
        return None


if _ROOT:
    sys.meta_path.insert(0, _TreeFinder)
