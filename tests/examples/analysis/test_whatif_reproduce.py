"""On every committed example, ``whatif --from``'s table and its check line describe one model: at each world size
a workload measured, the row shows the measured step beside the model's; at the world size a hold-out check hid,
that row's model is the check's prediction and says "reproduced" exactly where the check holds; and a projection
past the measured sizes is printed only where every one of them is reproduced, else one line says why not."""

from __future__ import annotations

import pytest

from ddpbench.analysis.folder import load
from ddpbench.testing import ROOT, run_main
from ddpbench.testing.pages import whatif_rows

EX = ROOT / "reports" / "examples"
FOLDERS = sorted(p.parent for pattern in ("*/results.jsonl", "*/*/results.jsonl") for p in EX.glob(pattern))


@pytest.mark.parametrize("folder", FOLDERS, ids=[str(f.relative_to(EX)) for f in FOLDERS])
def test_the_row_at_each_measured_size_and_the_check_line_agree(folder):
    model = load(folder).model
    out = run_main("whatif", "--from", folder)
    if not model.projected:
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        return
    assert out.returncode == 0, out.stderr
    for network, workload, _link in model.projected:
        block = out.stdout.split(f"model output for {workload.label} as measured in {folder} ({network})")[1]
        block = block.split("model output for ")[0]
        rows = whatif_rows(f"model output for {workload.label}" + block, workload.label)
        measured = {p: row for p, row in rows.items() if "reproduced" in row}
        assert workload.measured_world_size in measured  # the model beside the measurement
        agrees = all("not reproduced" not in " ".join(row) for row in measured.values())
        checks = model.holdout[(model.holdout["workload"] == workload.label) & (model.holdout["network"] == network)] \
            if len(model.holdout) else model.holdout
        for _, check in checks.iterrows():
            row = measured[int(check["hidden_world_size"])]
            assert float(row[10]) == pytest.approx(check["predicted_ms"], abs=0.006)  # the check's own figure
            said_row = " ".join(row)  # a held-out row's words end "(held out: fitted to 1, 2)"
            assert ("not reproduced" not in said_row) == bool(check["holds"]) and "held out" in said_row
            said = "so the projection holds as checked to" in block
            assert said == (agrees and bool(check["holds"])) or not check["holds"]
        assert ("no projection:" in block) == (not agrees)
        assert (sorted(rows) == sorted(measured)) if not agrees else len(rows) > len(measured)
