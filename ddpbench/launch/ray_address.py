"""An existing Ray cluster as a user names it (``traces --ray ADDRESS``): the address's form, whether a
Ray cluster answers there, and the connection to it, each ending in seconds with one line
(:class:`~ddpbench.errors.InputError`) where it cannot be made, and none of Ray's own output.

* **Form** (:func:`parse_address`): ``HOST:PORT``, a cluster's head as ``ray start --head`` prints it
  (its GCS); ``ray://HOST:PORT``, its Ray Client server; ``auto``, the cluster ``RAY_ADDRESS`` names
  or the one ``ray start`` last started on this machine (:func:`resolve_auto`); ``local``, one
  started for the command (:class:`~ddpbench.launch.ray_cluster.RayCluster`). HOST is a name, an
  IPv4 address or an IPv6 one in brackets; PORT 1 to 65535.
* **Answers** (:func:`check_reachable`), before Ray is asked to connect: the host resolves and a TCP
  connection to the port is taken, within :data:`REACH_S` each; then a GCS answers Ray's first
  question of a driver (its cluster id) over gRPC, or a Ray Client server takes an HTTP/2
  connection. Ray's own ``ray.init`` retries an address that does not answer for minutes, printing
  its warnings as it goes.
* **Connected** (:func:`connect`): ``ray.init`` with its output (Ray's C++ core writes to the
  process's stderr itself) sent to a file, given up on after :data:`CONNECT_S`. A failure is one
  line with the first line Ray gave.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tempfile
import threading
import time
from dataclasses import dataclass

from ddpbench.errors import InputError, shown
from ddpbench.launch.options import RAY_EXTRA

FLAG = "--ray"
#: what the flag takes, for its help and every line that refuses a value
FORMS = ("HOST:PORT (a running Ray cluster's head, as `ray start --head` prints it), ray://HOST:PORT (its Ray "
         "Client server), auto (the cluster RAY_ADDRESS names, or the one `ray start` last started on this "
         "machine) or local (one started on this machine for the command)")
#: the most seconds resolving the host, and then connecting to its port, may take each
REACH_S = 3.0
#: the most seconds the gRPC question of :func:`check_reachable` may take
ANSWER_S = 5.0
#: the most seconds ``ray.init`` may take once the cluster answered (a loaded 2-core machine takes about 7)
CONNECT_S = 60.0

_ADDRESS = re.compile(r"(?P<scheme>ray://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})")


@dataclass(frozen=True)
class Address:
    """A cluster's address: ``ray://`` (Ray Client) or not, its host (an IPv6 one without brackets) and port."""

    host: str
    port: int
    client: bool = False

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'ray://' if self.client else ''}{host}:{self.port}"


def _refused(said: str, why: str) -> InputError:
    """The line refusing the value ``said`` (as :func:`said_as` gives it) for ``why``."""
    return InputError("command line", FLAG, f"{said} {why}; allowed: {FORMS}")


def said_as(given: str, found: str = "") -> str:
    """The flag's value as a line names it: as typed, and for ``auto`` where it found its address."""
    return shown(given) + (f" ({found})" if found else "")


def parse_address(text: str, said: str | None = None) -> Address:
    """``text`` as :class:`Address` (module docstring), or one line naming the flag and the forms it takes.
    ``said``: the value as the line names it, where ``text`` was found from it (``auto``)."""
    said = shown(text) if said is None else said
    found = _ADDRESS.fullmatch(text.strip())
    if found is None:
        raise _refused(said, "is no Ray address")
    port = int(found["port"])
    if not 1 <= port <= 65535:
        raise _refused(said, f"has port {port}, where a port is 1 to 65535")
    return Address(found["host"].strip("[]"), port, client=bool(found["scheme"]))


def check_form(text: str) -> str:
    """argparse's ``type`` of ``--ray``: ``local``, ``auto`` or an :class:`Address` (module docstring);
    nothing is asked of the network yet."""
    if text.strip() in ("local", "auto"):
        return text.strip()
    parse_address(text)
    return text.strip()


def resolve_auto() -> tuple[str, str]:
    """The address ``auto`` stands for, as Ray finds it, and where it was found: ``RAY_ADDRESS`` where it
    is set, else the cluster ``ray start`` last started on this machine (or the one GCS running here).
    One line where there is none, or several."""
    named = os.environ.get("RAY_ADDRESS", "").strip()
    if named and named not in ("auto", "local"):
        return named, f"RAY_ADDRESS={named}"
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # a Ray whose private helper moved: say so rather than guess
        raise _refused(said_as("auto"), "cannot be resolved by this version of Ray: give the cluster's "
                       "HOST:PORT") from None
    try:
        with _quiet():
            found = canonicalize_bootstrap_address_or_die("auto")
    except Exception as err:  # noqa: BLE001 -- Ray's ConnectionError, and whatever else its search meets
        raise _refused(said_as("auto"), f"found no Ray cluster to connect to ({_first_line(err)})") from None
    return found, f"found {found}"


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return (lines[0] if lines else type(err).__name__)[:200]


def _resolved(host: str, port: int, timeout_s: float) -> list:
    """``getaddrinfo`` of ``host``, given up after ``timeout_s`` (it has no timeout of its own: a
    resolver that does not answer would hold the command)."""
    found: dict = {}

    def ask() -> None:
        try:
            found["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as err:
            found["error"] = err

    asker = threading.Thread(target=ask, daemon=True, name="ddpbench-resolve")
    asker.start()
    asker.join(timeout_s)
    if "error" in found:
        raise found["error"]
    if "infos" not in found:
        raise TimeoutError(f"no answer from the resolver within {timeout_s:g} s")
    return found["infos"]


def check_reachable(address: Address, said: str, timeout_s: float = REACH_S) -> None:
    """One line (:class:`InputError`) unless a Ray cluster answers at ``address`` (module docstring):
    the host resolves, its port takes a connection, and a GCS (or for ``ray://`` a gRPC server) answers
    there. ``said``: the flag's value as the line names it (:func:`said_as`)."""
    where = f"{address.host}:{address.port}"
    try:
        infos = _resolved(address.host, address.port, timeout_s)
    except (OSError, TimeoutError) as err:
        raise _refused(said, f"cannot be reached (the host {shown(address.host)} does not resolve: "
                       f"{getattr(err, 'strerror', None) or err})") from None
    last: OSError | None = None
    for family, kind, proto, _, sockaddr in infos:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(timeout_s)
                sock.connect(sockaddr)
            break
        except OSError as err:
            last = err
    else:
        if isinstance(last, TimeoutError):
            why = f"no answer from {where} within {timeout_s:g} s"
        elif isinstance(last, ConnectionRefusedError):
            why = f"connection refused: nothing listens at {where}"
        else:
            why = f"{where}: {getattr(last, 'strerror', None) or last or type(last).__name__}"
        raise _refused(said, f"cannot be reached ({why})")
    why = _not_ray(address)
    if why:
        raise _refused(said, f"cannot be connected to: {where} takes connections, but {why}")


def _not_ray(address: Address, timeout_s: float = ANSWER_S) -> str:
    """Why what listens at ``address`` is not the Ray cluster's server the address names ("" where it is,
    or where this Ray cannot tell: a cluster with TLS, a Ray without the generated gRPC stubs)."""
    if os.environ.get("RAY_USE_TLS", "").strip().lower() in ("1", "true"):
        return ""
    try:
        import grpc
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc
    except ImportError:
        return ""
    target = f"[{address.host}]:{address.port}" if ":" in address.host else f"{address.host}:{address.port}"
    channel = grpc.insecure_channel(target)
    try:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            return (f"no gRPC server answered there within {timeout_s:g} s (a Ray "
                    f"{'Client server' if address.client else 'head'} does)")
        if address.client:
            return ""
        try:
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(), timeout=timeout_s)
        except grpc.RpcError as err:
            code = err.code() if callable(getattr(err, "code", None)) else None
            return (f"no Ray head's GCS answered there ({getattr(code, 'name', 'no answer')}): give the port "
                    "`ray start --head` printed, or ray://HOST:PORT for its Ray Client server")
        return ""
    finally:
        channel.close()


class _Kept:
    """What :func:`_quiet` does on leaving: put stdout and stderr back, or (``keep``) leave Ray's output
    in its file for good, where Ray goes on writing as this process ends."""

    def __init__(self) -> None:
        self.kept = False

    def keep(self) -> None:
        self.kept = True


def _fd(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # a StringIO in a test's run_main, a closed stream
        return None


@contextlib.contextmanager
def _quiet():
    """This process's stdout and stderr (file descriptors 1 and 2) sent to a file while Ray runs: its C++
    core and its loggers write to them directly (a warning every few seconds while an address does not
    answer). Put back on leaving; where :meth:`_Kept.keep` was called (Ray still at work in a thread this
    process gives up on), 1 and 2 stay the file's and Python's ``sys.stdout`` and ``sys.stderr`` write
    where they wrote before, so the command's own line is seen and Ray's never."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    log = tempfile.TemporaryFile()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    state = _Kept()
    try:
        yield state
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        if not state.kept:
            for fd, was in zip((1, 2), saved):
                os.dup2(was, fd)
                os.close(was)
            log.close()
        else:  # the file stays open for Ray's writes until the process ends
            for name, fd, was in (("stdout", 1, saved[0]), ("stderr", 2, saved[1])):
                stream = getattr(sys, name)
                if _fd(stream) == fd:
                    setattr(sys, name, os.fdopen(was, "w", buffering=1, encoding=stream.encoding,
                                                 errors=stream.errors))
                else:
                    os.close(was)


def check_installed() -> None:
    """One line where Ray cannot be imported here."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise InputError("command line", FLAG, f"needs Ray, which is not installed here: {RAY_EXTRA}")


def connect(address: str, said: str, timeout_s: float = CONNECT_S) -> bool:
    """This process made Ray's driver on the cluster at ``address`` (a ``HOST:PORT`` or ``ray://`` one,
    found reachable), quietly (:func:`_quiet`) and within ``timeout_s``: True where this call connected,
    False where Ray was already connected (a caller that connected it keeps it). One line otherwise,
    naming the flag's value as ``said`` (:func:`said_as`).

    ``ray.init`` runs in a thread of its own, given up on after ``timeout_s`` (it cannot be stopped: its
    C++ client retries an address for minutes, and a signal reaches Python only between its calls).
    Off the main thread it also leaves the command's SIGTERM handler in place, which it replaces on it."""
    check_installed()
    import ray

    if ray.is_initialized():
        return False
    outcome: dict = {}

    def init() -> None:
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except BaseException as err:  # noqa: BLE001 -- every way it ends is said by the caller
            outcome["error"] = err

    began = time.monotonic()
    with _quiet() as quiet:
        worker = threading.Thread(target=init, name="ddpbench-ray-init", daemon=True)
        worker.start()
        try:
            worker.join(timeout_s)
        finally:  # given up on, or interrupted while it tries: Ray's output stays off the terminal
            if worker.is_alive():
                quiet.keep()
    if worker.is_alive():
        raise _refused(said, f"answered, but Ray did not connect to it within {timeout_s:g} s")
    if "error" in outcome:
        _shutdown(ray)
        raise _refused(said, f"answered, but Ray could not connect to it after {time.monotonic() - began:.0f} s: "
                       f"{_first_line(outcome['error'])}")
    return True


def _shutdown(ray) -> None:
    with contextlib.suppress(Exception), _quiet():
        ray.shutdown()


def disconnect() -> None:
    """This process no longer Ray's driver (what :func:`connect` made it), quietly."""
    import ray

    _shutdown(ray)


def check(text: str) -> tuple[str, str]:
    """The address to connect to for ``--ray`` ``text`` (``auto`` resolved; not ``local``), found
    answering (:func:`check_reachable`), and the value as a line names it (:func:`said_as`); or one line."""
    check_installed()
    said = said_as(text)
    if text == "auto":
        text, found = resolve_auto()
        said = said_as("auto", found)
    address = parse_address(text, said)
    check_reachable(address, said)
    return str(address), said
