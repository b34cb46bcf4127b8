"""The what-if model's leave-one-source-out check, stored: every held-out published row with the prediction
of the fold fitted without its source, its error and its band, as ``python -m ddpbench whatif --validate``
computes them (:func:`ddpbench.analysis.models.held_out`, about ten to twenty seconds).

    python benchmarks/whatif_loso.py [--out reports/examples/whatif-loso/held-out.csv]

The stored table is what the inner loop's tests read (tests/unit/analysis/models/test_validation.py: the bands
and coverage re-derived from it, one fold refitted and compared) and what docs/whatif.md quotes
(tests/examples/project/test_prose_figures.py); tests/examples/analysis/test_whatif_loso.py computes the
whole check again and holds it equal to this file. Run this after changing the model, its constants or
published_scaling.toml, and commit the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ddpbench.analysis.models import held_out, score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from written import check_out, write_out  # noqa: E402  (a sibling module)

HERE = Path(__file__).resolve().parent.parent
STORED = HERE / "reports" / "examples" / "whatif-loso" / "held-out.csv"
#: decimals kept of each figure: the recomputation must agree to these
DECIMALS = 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=STORED)
    args = parser.parse_args()
    check_out(args.out)
    result = held_out()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_out(args.out, result.table.round(DECIMALS).to_csv(index=False))
    whole = score(result.table)
    print(f"{args.out}: {whole.rows} held-out rows of {whole.sources} sources; mean {whole.mean_pp:.1f} pp, "
          f"largest {whole.max_pp:.1f} pp, the band covered {whole.coverage:.1%}")


if __name__ == "__main__":
    main()
