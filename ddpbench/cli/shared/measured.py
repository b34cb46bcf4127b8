"""What a folder measured, read for ``whatif --from`` (the command's side: :mod:`ddpbench.show` is handed
what is read here, never a folder): a results folder through the analysis's facade
(:func:`ddpbench.analysis.folder.load`), or a folder of profiler traces (:mod:`ddpbench.traces`), as the
projection's inputs or the workloads a cluster described is asked about; one line and exit 2 where it is
neither, or holds nothing to project."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ddpbench.cli.shared.parsing import frozen
from ddpbench.cli.shared.units import folder_gpus, gpu_memory
from ddpbench.errors import InputError
from ddpbench.show.projected import print_measured  # noqa: F401 - what is read here, shown: whatif imports both here


def measured_inputs(folder: Path, args=None) -> tuple[list, pd.DataFrame, dict]:
    """What ``folder`` measured, as the projection's inputs: ((network, workload, link), ...), its hold-out
    checks, and for each (network, workload label) the model's step at each world size it measured beside the
    measurement (:mod:`ddpbench.analysis.models.reproduce`) with where the ranks' spread came from; one line and
    exit 2 where it is neither a results folder nor traces, or where no traced job can be projected. ``args``:
    whatif's flags, given the memory of the GPU the folder names where no memory was given
    (:func:`ddpbench.cli.shared.units.gpu_memory`)."""
    from ddpbench.analysis.models import reproduced_in_folder, reproduced_in_trace, traced, traced_spread
    from ddpbench.results.schema import RESULTS_FILE

    if (folder / RESULTS_FILE).is_file():
        from ddpbench.analysis.folder import load

        measured = load(folder)
        if args is not None:
            gpu_memory(args, folder_gpus(measured))
        model = measured.model
        if not model.projected:
            raise InputError(str(folder), "world_size", "no finished DDP job at world size 1 and 2 or more to project "
                             "from; sweep world_size = [1, 2, ...] first")
        found = {(network, w.label): (reproduced_in_folder(measured.summary, model.holdout, network, w, link),
                                      "measured between them" if w.rank_spread else "not measured: none grown")
                 for network, w, link in model.projected}
        return list(model.projected), model.holdout, found
    if not folder.is_dir():
        raise InputError(str(folder), "--from", "not found: give a results folder or a folder of profiler traces")
    from ddpbench.traces.folder import read_folder
    from ddpbench.traces.read import jobs_in

    try:
        found = jobs_in(folder)
    except InputError:
        found = []
    if not found:
        raise InputError(str(folder), RESULTS_FILE, "not found, nor any profiler trace: give --from a folder written "
                         "by `ddpbench sweep` or one of torch.profiler traces")
    pairs, reproduced, why = [], {}, []
    for job in read_folder(folder):
        if args is not None:
            from ddpbench.traces.compare import gpu_names

            gpu_memory(args, gpu_names(job))
        made = traced(job)
        if isinstance(made, str):
            why.append(f"{job.name}: {made}")
            continue
        pairs.append(made)
        reproduced[(made[0], made[1].label)] = (reproduced_in_trace(job, made[1], made[2]), traced_spread(job))
    if not pairs:
        raise InputError(str(folder), "traces", "cannot be projected: " + "; ".join(why))
    return pairs, pd.DataFrame(), reproduced


def print_described(args, cluster) -> None:
    """``whatif --from`` with a cluster or a setting: what a results folder's workloads or a folder of traces'
    jobs measured, read here, shown on the cluster described (:func:`ddpbench.show.answers.print_from`,
    :func:`ddpbench.show.projected.print_traced`) with whatif's flags as a frozen value (``args`` unchanged)."""
    from ddpbench.results.schema import RESULTS_FILE
    from ddpbench.show.gbatch import print_fixed_from, refuse_traces

    refuse_traces(args)
    if (args.from_dir / RESULTS_FILE).is_file():
        from ddpbench.show.answers import print_from

        found, folder = measured_workloads(args.from_dir)  # at a fixed global batch where given or swept at one
        gpu_memory(args, folder_gpus(folder))
        fixed = args.global_batch is not None or any(w.global_batch for w in found)
        (print_fixed_from if fixed else print_from)(frozen(args), found, folder, cluster)
        return
    from ddpbench.show.projected import print_traced

    pairs, _, reproduced = measured_inputs(args.from_dir, args)
    print_traced(frozen(args, batch=args.batch_size), pairs, reproduced, cluster)


def measured_workloads(folder: Path) -> tuple[list, object]:
    """The workloads a sweep measured (:func:`ddpbench.analysis.models.costmodel.workloads`) and the folder, for a
    cluster ``whatif --from`` describes."""
    from ddpbench.analysis.folder import load
    from ddpbench.analysis.models import workloads

    measured = load(folder)  # loaded and summarised once, with its all_reduce curve
    found = workloads(measured.summary, measured.ranks)
    if not found:
        raise InputError(str(folder), "world_size", "no finished DDP job at world size 1 to take the compute from; "
                         "sweep world_size = [1, ...] first")
    return found, measured
