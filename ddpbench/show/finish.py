"""``whatif``'s time to finish, as the console shows it: per size the efficiency, the hours it trains, the
device-hours and the cost, each with its band, the wait in the queue and when it finishes; then which size to
ask for (:mod:`ddpbench.analysis.models.finish`), each answer with how sure."""

from __future__ import annotations

import math


def span_text(span, places: str = ".3g", percent: bool = False) -> str:
    """A figure and its band in one cell: ``3.19 [2.71 to 7.97]``, the figure alone where the band is none."""
    def one(x):
        if math.isinf(x):
            return "no bound"
        return f"{x:.0%}" if percent else f"{x:,.0f}" if abs(x) >= 1000 else f"{x:{places}}"

    if span.low == span.high:
        return one(span.value)
    return f"{one(span.value)} [{one(span.low)} to {one(span.high)}]"


def print_finish(args, rows: list, currency: str, said: str, memory=None) -> None:
    """The table of ``rows`` (:class:`ddpbench.analysis.models.Finish`, each size's run) and the three answers;
    ``args.ask_queue``, where given, gives each size's wait once the time to train is known. ``memory``
    (:class:`ddpbench.analysis.models.Memory`), where its device's memory is known: a column of whether each size's
    state fits, and the answers name only sizes that do."""
    from ddpbench.analysis.models import cheapest, first_to_finish, largest_above, with_waits

    if args.ask_queue is not None:
        rows = with_waits(rows, args.ask_queue(rows))
    queued = any(r.wait_h is not None for r in rows)
    priced = any(r.cost is not None for r in rows)
    checked = memory is not None and memory.device_gb is not None
    print(f"time to finish {said}; each figure with its band (the efficiency's band carried through: the step is "
          "the step alone over the efficiency)" + (f"; the queue: {args.queue_said}" if queued else ""))
    heads = ["devices", "nodes", "efficiency [band]", "train h [band]", "device-h [band]"] \
        + ([f"{currency} [band]"] if priced else []) + (["starts in h", "finishes in h [band]"] if queued else []) \
        + (["fits"] if checked else [])
    cells = [[str(r.devices), str(r.nodes), span_text(r.efficiency, percent=True), span_text(r.hours),
              span_text(r.device_hours)] + ([span_text(r.cost)] if priced else [])
             + ([f"{r.wait_h:.3g}", span_text(r.done_h)] if queued else [])
             + (["yes" if memory.fits(r.devices) else "no"] if checked else []) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    print("  ".join(h.rjust(w) for h, w in zip(heads, widths)))
    for c in cells:
        print("  ".join(x.rjust(w) for x, w in zip(c, widths)))
    fitting = [r for r in rows if not checked or memory.fits(r.devices)]  # never an answer that does not fit
    if not fitting:
        print("which size to ask for: none: no size asked holds its parameters, gradients and optimizer state in "
              f"{memory.device_gb:g} GB a device (memory, above)")
        return
    left = f" (of the sizes that fit: {fitting[0].devices} and up)" if len(fitting) < len(rows) else ""
    print(f"finishes first{', wait included' if queued else ''}{left}: {first_to_finish(fitting).words}")
    print(f"cheapest in device-hours{left}: {cheapest(fitting).words}")
    print(f"largest whose efficiency band stays at or above {args.floor:.0%} (--min-efficiency){left}: "
          f"{largest_above(fitting, args.floor).words}")
