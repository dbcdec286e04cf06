"""The advisor's table and JSON document."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from nnperf.optimize.advise import Advice


def advice_table(advice: Advice) -> Table:
    table = Table(title=f"{advice.network}: width changes within +/-{advice.tolerance:.0%} that run faster "
                        "(predicted by the composed step models)")
    for name in ("layer", "width", "suggested", "layers affected", "predicted now (ms)", "then (ms)", "saving",
                 "beyond trend", "measured saving"):
        table.add_column(name, justify="left" if name == "layer" else "right")
    for s in advice.suggestions:
        measured = s.measured_saving
        table.add_row(s.layer, f"{s.parameter}={s.current}", str(s.suggested), str(len(s.affected)),
                      f"{s.current_s * 1e3:.4g}", f"{s.suggested_s * 1e3:.4g}", f"{s.saving:.1%}",
                      f"{s.bonus_s / s.current_s:.1%}", "-" if measured is None else f"{measured:.1%}")
    return table


def advice_document(advice: Advice) -> dict[str, Any]:
    return {"format": "nnperf-advice", "version": 1, "network": advice.network, "system": advice.system,
            "tolerance": advice.tolerance, "considered": advice.considered, "skipped": dict(advice.skipped),
            "suggestions": [{"layer": s.layer, "parameter": s.parameter, "current": s.current,
                             "suggested": s.suggested, "affected": list(s.affected), "current_s": s.current_s,
                             "suggested_s": s.suggested_s, "saving": s.saving, "bonus_s": s.bonus_s,
                             "measured_current_s": s.measured_current_s,
                             "measured_suggested_s": s.measured_suggested_s, "measured_saving": s.measured_saving}
                            for s in advice.suggestions]}
