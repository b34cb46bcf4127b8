"""The DDP settings a script's model is built with: the job's, so that a stored job says what ran.

A script builds ``DistributedDataParallel`` itself and may pass its own settings. ddpbench sweeps
them, and stores the job's values as the settings the job ran with (its spec, its key, the
summary's columns), so the model must be built with exactly those:

* ``bucket_cap_mb`` is always the job's. A cap the script passes (or a per-bucket
  ``bucket_cap_mb_list``, which would replace the cap) is overridden, and reported as what the
  script asked for (``result.script.ddp_overridden``);
* ``gradient_as_bucket_view``, ``static_graph``, ``find_unused_parameters``: a job that sets one
  away from its default (``true``) gets it, whatever the script passes (the script's own value is
  reported as overridden). Where the job leaves one at its default and the script passes another
  value, the job is refused with the value to set: the job's key does not tell a ``false`` written
  in the experiment from the default, so ddpbench cannot know that the job meant to overrule the
  script, and running the script's value would store a job that says it ran with the default.
"""

from __future__ import annotations

from ddpbench.experiment.spec import FIELDS

#: DDP's switches a job sets
SWITCHES = ("gradient_as_bucket_view", "static_graph", "find_unused_parameters")
#: DDP's bucket cap when it is given None (its own default), in MB
DDP_DEFAULT_CAP_MB = 25.0


def _toml(value) -> str:
    return "true" if value else "false"


def ddp_settings(spec, asked: dict, accepts=(), refuse=ValueError) -> tuple[dict, dict]:
    """The arguments ddpbench gives the script's ``DistributedDataParallel`` on top of the script's.

    ``asked``: the arguments the script passed, by name (as :meth:`inspect.Signature.bind` gives
    them, before defaults); ``accepts``: the parameters this torch's DDP takes (for
    ``bucket_cap_mb_list``, which older versions lack); ``refuse``: the exception a refusal raises
    (the instrument's :class:`~ddpbench.rank.script.steps.BadScript`, passed in: it imports this
    module). Returns ``(settings, overridden)``: the values to build DDP with, and ``{name:
    {"script": asked, "ran": applied}}`` for every setting the script passed whose value the job
    replaced. Raises ``refuse`` for a switch the script sets away from a job's default (see the
    module doc).
    """
    settings: dict = {"bucket_cap_mb": float(spec.bucket_cap_mb)}
    overridden: dict = {}
    if "bucket_cap_mb" in asked:
        cap = asked["bucket_cap_mb"]
        cap = DDP_DEFAULT_CAP_MB if cap is None else cap
        if isinstance(cap, bool) or not isinstance(cap, (int, float)):
            overridden["bucket_cap_mb"] = {"script": repr(cap), "ran": settings["bucket_cap_mb"]}
        elif float(cap) != settings["bucket_cap_mb"]:
            overridden["bucket_cap_mb"] = {"script": float(cap), "ran": settings["bucket_cap_mb"]}
    if "bucket_cap_mb_list" in accepts:
        settings["bucket_cap_mb_list"] = None
        if asked.get("bucket_cap_mb_list"):
            overridden["bucket_cap_mb_list"] = {"script": list(asked["bucket_cap_mb_list"]), "ran": None}
    for name in SWITCHES:
        job = bool(getattr(spec, name))
        settings[name] = job
        if name not in asked or bool(asked[name]) == job:
            continue
        mine = bool(asked[name])
        if job == FIELDS[name].default:
            raise refuse(f"the script builds DDP with {name}={mine} and the job says {job} (the default): set "
                            f"{name} = {_toml(mine)}, so that the job stores what DDP runs with")
        overridden[name] = {"script": mine, "ran": job}
    return settings, overridden


def check_ran(spec, ddp, refuse=ValueError) -> None:
    """Raise ``refuse`` where the script's DDP model ran with another setting than the job's: one the
    script changed after it built the model (``ddp._set_static_graph()``, or an attribute set by hand),
    read from the model once the script has stopped."""
    for name in SWITCHES:
        ran = getattr(ddp, name, None)
        job = bool(getattr(spec, name))
        if ran is not None and bool(ran) != job:
            raise refuse(f"the script's DDP model ran with {name}={bool(ran)} and the job says {job}: the script "
                         f"changed it after building DDP; set {name} = {_toml(ran)}")
    cap = getattr(ddp, "bucket_bytes_cap", None)
    if isinstance(cap, int) and cap != int(spec.bucket_cap_mb * 1024 * 1024):
        raise refuse(f"the script's DDP model ran with a bucket cap of {cap / 2**20:g} MB and the job says "
                     f"bucket_cap_mb = {spec.bucket_cap_mb:g}: the script changed it after building DDP "
                     "(ddpbench sweeps the cap)")
