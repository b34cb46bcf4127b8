"""Where a Ray address answers, but not as Ray (:mod:`ddpbench.launch.ray_address`): something other
than a gRPC server at the port is said so within its bound; and a connection that does not come is given
up after its bound in one line, Ray's warnings, which its client goes on writing as it retries, never
reaching the terminal (in a process of its own: Ray's driver state and the process's stderr are what is
tested). Both import Ray (seconds): not in the inner loop."""

import contextlib
import http.server
import importlib.util
import os
import subprocess
import sys
import threading
import time

import pytest

from ddpbench.launch.ray_address import Address, _not_ray

HAS_RAY = importlib.util.find_spec("ray") is not None

#: the bound the test gives, and the most the whole process may take (Ray's import included): a guard
BOUND_S, GUARD_S = 3, 60.0

CODE = f"""
import sys, time
from ddpbench.errors import InputError
from ddpbench.launch.ray_address import connect
try:
    connect("127.0.0.1:1", "'here'", timeout_s={BOUND_S})
except InputError as err:
    sys.stderr.write(f"error: {{err}}\\n")
    time.sleep(6)  # Ray's client warns every 5 s while it retries in the thread given up on
    print("still one line", file=sys.stderr)
"""


def test_a_ray_connection_that_does_not_come_is_given_up_quietly():
    pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"})
    took = time.monotonic() - began - 6
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 0 and done.stdout == "", (done.stdout, done.stderr)
    assert lines[1:] == ["still one line"], done.stderr
    assert f"--ray: 'here' answered, but Ray did not connect to it within {BOUND_S} s" in lines[0], lines[0]
    assert took < GUARD_S, f"{took:.1f} s"


@contextlib.contextmanager
def _http_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    server.RequestHandlerClass.log_message = lambda *a: None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (the ray extra): gRPC comes with it")
@pytest.mark.parametrize("client", [False, True], ids=["HOST:PORT", "ray://"])
def test_a_port_where_something_other_than_ray_answers_is_said_so(client):
    with _http_server() as port:
        why = _not_ray(Address("127.0.0.1", port, client=client), timeout_s=1)
    assert why.startswith("no gRPC server answered there within 1 s"), why
    assert ("Client server" in why) == client
