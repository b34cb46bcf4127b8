"""One results folder, one sweep (:mod:`ddpbench.files.folders`): ``--wait`` waits for the running
sweep's lock, then takes the folder. The folder's rules are in tests/unit/files/test_folders.py."""

import os
import threading
import time

from ddpbench.files.writing import claimed

# ---------------------------------------------------------------------------------------------
# the lock
# ---------------------------------------------------------------------------------------------


def test_wait_waits_for_the_running_sweep_then_takes_the_folder(tmp_path):
    out = tmp_path / "out"
    order, waited = [], []
    held = threading.Event()

    def first():
        with claimed(out):
            held.set()
            time.sleep(1.0)
            order.append("first done")

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(10)
    with claimed(out, wait=True, on_wait=waited.append):
        order.append("second in")
    thread.join()
    assert order == ["first done", "second in"]
    assert len(waited) == 1 and f"pid {os.getpid()}" in waited[0]
