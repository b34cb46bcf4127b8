"""What a watched rank and ``ddpbench watch``'s collector say to each other, declared once.

A rank connects to the collector (its address and the run's secret come through the launcher's
environment: :data:`ADDRESS_ENV`, :data:`SECRET_ENV`) over TCP, and every message is a *frame*: one
byte of kind, four of length (network order), then the payload, at most :data:`MAX_FRAME` bytes.

1. The collector speaks first: a :data:`NONCE` frame of :data:`NONCE_BYTES` random bytes.
2. The rank answers :data:`HELLO`: the HMAC-SHA256 of the nonce under the secret (32 bytes; the secret
   itself never crosses the wire), then a JSON object: its ``rank``, ``world_size``, ``local_rank``,
   ``host`` and ``pid``. A collector that cannot verify it closes the connection and counts it refused.
3. Then the rank sends :data:`STEPS` frames, each a batch of step rows packed as :data:`ROW` (one row
   per optimizer step, the columns of :data:`STEP_COLUMNS`), and :data:`NOTE` frames (a JSON object:
   ``dropped``, the rows its bounded queue has let go so far, a running count; ``said``, one line about
   the rank, such as why its steps cannot be watched; ``traced``, a trace file it wrote), and :data:`BYE`
   as it ends.
4. The collector may send a rank :data:`REQUEST` frames (a JSON object, :func:`request`): ``trace``, the
   profiler traces of the steps it names, which the rank records and then names in a note (``traced``);
   ``dense``, the steps it names each a phase step.

A step's phases are measured on sampled steps only (the phase hooks cost a step more than its end
does): on the others they are NaN, as is ``ready_ms`` (the step's last gradient accumulated, from the
step's start). ``end_s`` is the step's end on the rank host's wall clock (seconds since the epoch).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import struct

from ddpbench.results.phases import WATCH_PHASE_COLUMNS, WATCH_STEP_COLUMNS

#: the environment a watched run's processes find the collector and the run's secret in
ADDRESS_ENV = "DDPBENCH_WATCH"
SECRET_ENV = "DDPBENCH_WATCH_SECRET"

NONCE, HELLO, STEPS, NOTE, BYE, REQUEST = 1, 2, 3, 4, 5, 6
KINDS = {NONCE: "nonce", HELLO: "hello", STEPS: "steps", NOTE: "note", BYE: "bye", REQUEST: "request"}
HEAD = struct.Struct("!BI")
#: the largest frame either side takes (a longer one is garbage: the connection is closed)
MAX_FRAME = 1 << 20
NONCE_BYTES = 16
DIGEST_BYTES = hashlib.sha256().digest_size

#: the phases of a sampled step, and a step row's columns in the order :data:`ROW` packs them (declared with
#: the record's phases, :mod:`ddpbench.results.phases`, where a watched run's readers find them)
PHASE_COLUMNS, STEP_COLUMNS = WATCH_PHASE_COLUMNS, WATCH_STEP_COLUMNS
ROW = struct.Struct("!q" + "d" * (len(STEP_COLUMNS) - 1))
#: what a hello names about its rank
HELLO_KEYS = ("rank", "world_size", "local_rank", "host", "pid")


class Garbage(ValueError):
    """A frame that is not what the protocol allows (its kind, length or payload)."""


class WrongSecret(Garbage):
    """A hello whose digest is not the run's secret's: a sender of another run (or none), which a
    collector counts apart from a garbled frame."""


def frame(kind: int, payload: bytes) -> bytes:
    if len(payload) > MAX_FRAME:
        raise ValueError(f"a frame of {len(payload)} bytes; at most {MAX_FRAME}")
    return HEAD.pack(kind, len(payload)) + payload


def split(buffer: bytearray) -> list[tuple[int, bytes]]:
    """The whole frames at the start of ``buffer``, taken out of it (a partial frame stays)."""
    frames = []
    while len(buffer) >= HEAD.size:
        kind, length = HEAD.unpack_from(buffer)
        if kind not in KINDS or length > MAX_FRAME:
            raise Garbage(f"a frame of kind {kind} and {length} bytes")
        if len(buffer) < HEAD.size + length:
            break
        frames.append((kind, bytes(buffer[HEAD.size:HEAD.size + length])))
        del buffer[:HEAD.size + length]
    return frames


def new_secret() -> str:
    return os.urandom(24).hex()


def digest(secret: str, nonce: bytes) -> bytes:
    return hmac.new(secret.encode(), nonce, hashlib.sha256).digest()


def hello(secret: str, nonce: bytes, about: dict) -> bytes:
    return frame(HELLO, digest(secret, nonce) + json.dumps({k: about.get(k) for k in HELLO_KEYS}).encode())


def read_hello(secret: str, nonce: bytes, payload: bytes) -> dict:
    """The rank a hello names; :class:`WrongSecret` where its digest is not the secret's, :class:`Garbage`
    where its JSON is bad."""
    if not hmac.compare_digest(payload[:DIGEST_BYTES], digest(secret, nonce)):
        raise WrongSecret("a hello without the run's secret")
    try:
        about = json.loads(payload[DIGEST_BYTES:])
    except (ValueError, UnicodeDecodeError) as e:
        raise Garbage(f"a hello whose JSON does not parse ({e})") from None
    if not isinstance(about, dict) or not isinstance(about.get("rank"), int) or about["rank"] < 0:
        raise Garbage("a hello without its rank (a whole number from 0)")
    return {k: about.get(k) for k in HELLO_KEYS}


def pack_steps(rows: list[tuple]) -> bytes:
    """A :data:`STEPS` frame of ``rows`` (each in :data:`STEP_COLUMNS`' order; None packs as NaN)."""
    return frame(STEPS, b"".join(ROW.pack(int(r[0]), *(math.nan if v is None else float(v) for v in r[1:]))
                                 for r in rows))


def unpack_steps(payload: bytes) -> list[tuple]:
    if len(payload) % ROW.size:
        raise Garbage(f"a steps frame of {len(payload)} bytes, not a whole number of {ROW.size}-byte rows")
    return list(ROW.iter_unpack(payload))


def note(**said) -> bytes:
    return frame(NOTE, json.dumps(said).encode())


def request(**asked) -> bytes:
    """A :data:`REQUEST` frame, the collector's to a rank: ``trace``, the profiler traces of the steps from
    ``from_step`` for ``steps`` steps, written into ``folder`` as ``rank<N>.json`` (the rank then says
    ``traced``: the file, in a note); ``dense``, every step from ``from_step`` for ``steps`` steps a phase
    step (the steps an alarm is judged on)."""
    return frame(REQUEST, json.dumps(asked).encode())


def read_note(payload: bytes) -> dict:
    try:
        said = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as e:
        raise Garbage(f"a note whose JSON does not parse ({e})") from None
    if not isinstance(said, dict):
        raise Garbage("a note that is not a JSON object")
    return said
