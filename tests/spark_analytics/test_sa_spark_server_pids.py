"""A Spark server's supervisor is recognised by its command line (spark_server._pid_alive):
also in the first moments after it is started, when Linux shows a process that is still
being exec'd with an empty command line. Two analyses finishing at once each start the
server unless the second sees the first's supervisor alive (found by
test_sa_spark_server.py's concurrent first runs, which started two servers now and then)."""
from __future__ import annotations

import os
import subprocess
import sys

from rocketmq_emulator.spark_analytics.spark_server import _pid_alive


def test_a_process_just_started_is_alive_by_its_command_line(tmp_path):
    marker = str(tmp_path / "spark-server-state")
    for _ in range(30):
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)", marker],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
                             close_fds=True)
        try:
            assert _pid_alive(p.pid, marker)
        finally:
            p.kill()
            p.wait()


def test_another_process_and_one_that_ended_are_not(tmp_path):
    marker = str(tmp_path / "spark-server-state")
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)", "something else"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        assert not _pid_alive(p.pid, marker)
    finally:
        p.kill()
        p.wait()
    assert not _pid_alive(p.pid, marker)          # reaped: no such process
    zombie = subprocess.Popen([sys.executable, "-c", "pass", marker])
    # ended, not reaped yet (WNOWAIT: waited for, left a zombie): a zombie is no supervisor
    os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)
    try:
        assert not _pid_alive(zombie.pid, marker)
    finally:
        zombie.wait()
