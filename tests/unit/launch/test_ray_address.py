"""A Ray address as ``traces --ray`` takes it (:mod:`ddpbench.launch.ray_address`): the forms it takes and
refuses as typed, each refusal one line naming the flag and the forms; and where nothing answers at a
well-formed one, one line at once (where something other than Ray does: tests/processes/launch)."""

import socket
import time

import pytest

from ddpbench.errors import InputError
from ddpbench.launch.ray_address import Address, check_form, check_reachable, parse_address, said_as


@pytest.mark.parametrize("text, address", [
    ("10.0.0.1:6379", Address("10.0.0.1", 6379)),
    ("head-node.cluster.local:6379", Address("head-node.cluster.local", 6379)),
    ("ray://10.0.0.1:10001", Address("10.0.0.1", 10001, client=True)),
    ("[::1]:6379", Address("::1", 6379)),
    ("h:1", Address("h", 1)),
    ("h:65535", Address("h", 65535)),
])
def test_the_forms_it_takes(text, address):
    assert parse_address(text) == address and str(address) == text and check_form(text) == text


@pytest.mark.parametrize("text", ["local", "auto"])
def test_local_and_auto_are_taken_as_they_are(text):
    assert check_form(text) == text


@pytest.mark.parametrize("text, words", [
    ("", "is no Ray address"), ("bogus", "is no Ray address"), ("h:", "is no Ray address"),
    (":6379", "is no Ray address"), ("h:0", "has port 0"), ("h:65536", "has port 65536"),
    ("http://h:1", "is no Ray address"), ("ray://h", "is no Ray address"), ("h :1", "is no Ray address"),
    ("h:1:2", "is no Ray address"), ("LOCAL", "is no Ray address"),
])
def test_what_it_refuses_as_typed_is_one_line_naming_the_flag_and_the_forms(text, words):
    with pytest.raises(InputError) as caught:
        check_form(text)
    line = str(caught.value)
    assert line.startswith(f"command line: --ray: {text!r} {words}"), line
    assert "allowed: HOST:PORT" in line and "ray://HOST:PORT" in line and "auto" in line and "local" in line
    assert "\n" not in line


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_port_nothing_listens_at_is_one_line_at_once():
    port = _free_port()
    began = time.monotonic()
    with pytest.raises(InputError, match=f"connection refused: nothing listens at 127.0.0.1:{port}"):
        check_reachable(Address("127.0.0.1", port), said_as(f"127.0.0.1:{port}"))
    assert time.monotonic() - began < 2


def test_a_host_that_does_not_resolve_is_one_line():
    with pytest.raises(InputError, match="the host 'head.invalid' does not resolve"):
        check_reachable(Address("head.invalid", 6379), said_as("head.invalid:6379"), timeout_s=3)
