"""A cluster ddpbench starts waits for its node to register with the GCS as long as the cluster may take to
start, not only Ray's own fixed 30 s (:func:`ray_cluster.wait_to_register`): Ray's ``services.get_node`` is stood
in for by one that does not know the node for a while. The real thing, a raylet held stopped past Ray's wait:
tests/processes/launch/test_ray.py."""

import time
from types import SimpleNamespace

import pytest

from ddpbench.launch import ray_cluster
from ddpbench.launch.ray_cluster import wait_to_register


def unknown_for(calls: int) -> SimpleNamespace:
    """A stood-in ``ray._private.services`` whose GCS does not know the node for its first ``calls`` calls."""
    asked = []

    def get_node(gcs_address, node_id):
        asked.append((gcs_address, node_id))
        if len(asked) <= calls:
            raise RuntimeError(f"b'GCS cannot find the node with node ID {node_id}'")
        return {"node_id": node_id}

    return SimpleNamespace(get_node=get_node, asked=asked)


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
    monkeypatch.setattr(ray_cluster, "REGISTER_POLL_S", 0.001)


def test_a_node_unknown_at_first_is_asked_for_again_until_it_has_registered():
    services = unknown_for(3)
    wait_to_register(services, time.monotonic() + 60)
    assert services.get_node("127.0.0.1:6379", "n1") == {"node_id": "n1"}  # one call of Ray's, as Ray makes it
    assert services.asked == [("127.0.0.1:6379", "n1")] * 4


def test_past_the_deadline_the_gcs_s_last_word_is_raised_for_ray_to_say():
    services = unknown_for(10**9)
    wait_to_register(services, time.monotonic() + 0.05)
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="GCS cannot find the node with node ID n1"):
        services.get_node("127.0.0.1:6379", "n1")
    assert 0.04 < time.monotonic() - began < 5 and len(services.asked) > 1


def test_a_known_node_is_asked_for_once_and_other_errors_are_not_waited_out():
    services = unknown_for(0)
    wait_to_register(services, time.monotonic() + 60)
    assert services.get_node("a", "n1") == {"node_id": "n1"} and len(services.asked) == 1

    tried = []

    def refused(*args):
        tried.append(args)
        raise ConnectionError("GCS gone")

    services = SimpleNamespace(get_node=refused)
    wait_to_register(services, time.monotonic() + 1)
    with pytest.raises(ConnectionError):
        services.get_node("a", "n1")
    assert len(tried) == 1


def test_a_ray_without_get_node_is_left_as_it_is():
    services = SimpleNamespace()
    wait_to_register(services, time.monotonic() + 60)
    assert not hasattr(services, "get_node")
