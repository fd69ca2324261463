"""decision.md: the decision record rendered for people (decision.json is the source).

Every value from the run (variant and case ids, tags, field names, errors, hardware, ...)
goes through `escape_markdown`, so a hostile case id such as `<script>|x` shows as text: it
neither breaks a table nor renders as HTML or formatting.
"""

from __future__ import annotations

from evaluators.comparison import PairedDelta
from quantgate._formatting import MISSING, interval_points, number, percent, points
from quantgate.capacity._capacity_rows import capacity_section
from quantgate.render._calibration_rows import CALIBRATION_NOTE, calibration_sentence, calibration_table
from quantgate.render._cost_rows import cost_rows
from quantgate.render._decision_record import record_lines
from quantgate.render._embedding_table import embedding_rows
from quantgate.render._fidelity_tail import fidelity_tail
from quantgate.render._flip_rows import FLIP_HEADER, FLIP_NOTE, flip_rows
from quantgate.render._latency_pairs import latency_pairs
from quantgate.render._markdown import escape_markdown, markdown_table
from quantgate.render._measurement_notes import measurement_rows
from quantgate.render._noise_floor_line import noise_floor_text
from quantgate.render._runtime_rows import RUNTIME_NOTE, runtime_table
from quantgate.render._task_figures import task_figures
from quantgate.rundir._decision import Decision, VariantDecision
from quantgate.rundir._summary import DatasetInfo, RunSummary, SequentialEntry


def _incomplete(decision: Decision) -> list[str]:
    if not decision.run_problems:
        return []
    return [
        "> **Incomplete run.** This decision is of what the run directory held, not of the whole run:",
        ">",
        *(f"> - {escape_markdown(problem)}" for problem in decision.run_problems),
        "",
    ]


def _headline(decision: Decision) -> list[str]:
    chosen = escape_markdown(decision.recommended)
    if decision.recommended is None:
        text = (
            f"**No variant passes every gate, not even the reference.** Exit status {decision.exit_status}."
        )
    elif decision.recommended_is_reference:
        text = (
            f"**Keep the reference, {chosen}.** No quantized variant passes every gate; the "
            f"reference does. Exit status {decision.exit_status}."
        )
    elif decision.recommended_by == "cost" and decision.costs is not None:
        costs = decision.costs.variants[decision.recommended]
        unit = f" {escape_markdown(decision.costs.currency)}" if decision.costs.currency else ""
        text = (
            f"**Recommended: {chosen}**, the cheapest expected cost "
            f"({number(costs.total_per_1000, '{:.4g}')}{unit} per 1,000 extractions) among the variants "
            f"that pass every gate. Exit status {decision.exit_status}."
        )
    else:
        section = decision.variants[decision.recommended]
        footprint = number(section.footprint_mb, "{:.0f}")
        text = (
            f"**Recommended: {chosen}**, the smallest footprint ({footprint} MiB, "
            f"{escape_markdown(section.footprint_source)}) among the variants that pass every gate. "
            f"Exit status {decision.exit_status}."
        )
    record = decision.record
    dataset = record.dataset
    return [
        f"# Decision for run {escape_markdown(record.run_id)}",
        "",
        *_incomplete(decision),
        text,
        "",
        f"Reference: {escape_markdown(decision.reference)}. Dataset: {escape_markdown(dataset.name)}, "
        f"{dataset.cases} cases (sha256 {escape_markdown(dataset.sha256)}{_left_out(dataset)}). "
        f"Run status: {escape_markdown(record.run_status)}.",
        "",
    ]


def _left_out(dataset: DatasetInfo) -> str:
    """`; 64 calibration cases left out of scoring`, when the run left some out."""
    left = dataset.calibration_cases_left_out
    return f"; {len(left)} calibration cases left out of scoring" if left else ""


def _overview_row(name: str, v: VariantDecision) -> list[str]:
    if v.status != "ok":
        return [name, v.status, *[MISSING] * 10]
    overall = v.comparison.overall if v.comparison else None
    fidelity = v.token_fidelity
    return [
        name + (" (reference)" if v.is_reference else ""),
        v.verdict,
        number(v.footprint_mb, "{:.0f}"),
        points(overall.delta if overall else None),
        interval_points(overall.interval if overall else None),
        overall.verdict if overall else MISSING,
        f"{overall.reference_only}/{overall.variant_only}" if overall else MISSING,
        number(overall.mcnemar_p if overall else None),
        percent(v.measured.format_validity if v.measured else None),
        percent(v.agreement.overall if v.agreement else None),
        number(fidelity.kld_mean if fidelity else None, "{:.4f}"),
        percent(fidelity.top1_agreement if fidelity else None),
    ]


_OVERVIEW = ["variant", "gates", "footprint MiB", "Δ acc (pts)", "95% CI", "verdict", "b/c", "McNemar p",
             "valid", "agreement", "KLD mean", "top-1"]  # fmt: skip
_OVERVIEW_NOTE = (
    "Δ acc: field accuracy minus the reference's on the same cases, with the interval it is judged "
    "by (valid at any number of cases; the method is in the record below) and the equivalence "
    "verdict. b/c: cases exactly right (every field) for the "
    "reference only / for the variant only, the discordant pairs of McNemar's exact test. "
    "Agreement: field-level agreement with the reference's own outputs (no gold needed). KLD "
    "and top-1: token-level fidelity to the reference (nats; see docs/token-fidelity.md)."
)


def _overview(decision: Decision, summary: RunSummary | None = None) -> list[str]:
    rows = [_overview_row(name, v) for name, v in decision.variants.items()]
    floor = noise_floor_text(summary)
    noise = [escape_markdown(floor), ""] if floor else []
    return ["## Variants", "", *markdown_table(_OVERVIEW, rows), _OVERVIEW_NOTE, "", *noise]


def _latency(summary: RunSummary | None) -> list[str]:
    """Each candidate's latency against the reference, paired by case, with intervals."""
    table = latency_pairs(summary, reference_mark=" (reference)") if summary is not None else None
    if table is None:
        return []
    return ["## Latency", "", *markdown_table(table.header, table.rows), escape_markdown(table.note), ""]


def _flips(decision: Decision) -> list[str]:
    rows = flip_rows(decision)
    return ["## Flips", "", *markdown_table(FLIP_HEADER, rows), FLIP_NOTE, ""] if rows else []


def _fidelity(decision: Decision) -> list[str]:
    """Token fidelity's tail per variant, and per slice when cases have tags."""
    tail = fidelity_tail([(name, v.token_fidelity) for name, v in decision.variants.items()])
    if tail is None:
        return []
    slices = [*markdown_table(tail.slice_header, tail.slice_rows)] if tail.slice_rows else []
    return ["## Token fidelity", "", *markdown_table(tail.header, tail.rows), *slices, tail.note, ""]


def task_figures_section(summary: RunSummary | None, *, level: str = "##") -> list[str]:
    """The run's task-kind figures per variant as a Markdown section (none for an extraction run,
    or without the run's summary)."""
    figures = task_figures(summary, reference_mark=" (reference)") if summary is not None else None
    if figures is None:
        return []
    title = f"{level} {figures.kind.capitalize()} figures"
    return [title, "", *markdown_table(figures.header, figures.rows), escape_markdown(figures.note) + ".", ""]


def _gates(decision: Decision) -> list[str]:
    lines = ["## Gates", ""]
    settings = [
        [k, "off" if v is None else str(v)]
        for k, v in decision.gates.model_dump().items()
        if k != "format_version"
    ]
    lines += markdown_table(["gate", "threshold"], settings)
    for name, v in decision.variants.items():
        if not v.gates:
            continue
        rows = [[g.gate, g.status, g.evidence] for g in v.gates]
        lines += [f"### {escape_markdown(name)}", "", *markdown_table(["gate", "status", "evidence"], rows)]
        if v.sequential is not None:
            lines += [_sequential_line(v.sequential, is_reference=v.is_reference), ""]
        if v.open is not None:
            lines += [f"Forecast: {escape_markdown(v.open.message)}.", ""]
    return lines


def _sequential_line(s: SequentialEntry, *, is_reference: bool) -> str:
    if is_reference:
        until = {
            "settled": "every candidate was settled",
            "budget": "the budget",
            "cases": "the cases ran out",
        }
        return f"Sequential: ran {s.cases} cases, until {until[s.stopped]}."
    how = f"settled {s.settled}" if s.settled else f"not settled (stopped: {s.stopped})"
    return f"Sequential: {how} after {s.paired_cases} paired cases ({s.cases} evaluated)."


def _delta_row(label: str, d: PairedDelta) -> list[str]:
    return [
        label,
        str(d.cases),
        percent(d.reference),
        percent(d.variant),
        points(d.delta),
        interval_points(d.interval),
        interval_points(d.descriptive_interval),
        f"{d.reference_only}/{d.variant_only}",
        number(d.mcnemar_p),
        d.verdict,
    ]


def _deltas(decision: Decision) -> list[str]:
    lines = ["## Paired deltas per field and slice", ""]
    header = [
        "", "cases", "reference", "variant", "Δ (pts)", "95% CI", "bootstrap (descriptive)", "b/c",
        "McNemar p", "verdict",
    ]  # fmt: skip
    for name, v in decision.variants.items():
        comparison = v.comparison
        if comparison is None:
            continue
        rows = [_delta_row(f"field {key}", d) for key, d in comparison.fields.items()]
        rows += [_delta_row(f"slice {key}", d) for key, d in comparison.slices.items()]
        title = f"### {escape_markdown(name)} vs {escape_markdown(decision.reference)}"
        lines += [title, "", *markdown_table(header, rows)]
    if len(lines) > 2:
        lines += [
            "The 95% CI is the interval each delta is judged by, valid at any number of cases (see the "
            "record below); the percentile bootstrap beside it is descriptive: at tens of cases with rare, "
            "large failures its coverage falls well short of 95%.",
            "",
        ]
    return lines


def _runtimes(decision: Decision) -> list[str]:
    """The same model file on two backends, when the run has such a pair."""
    table = runtime_table(decision)
    if table is None:
        return []
    return ["## Runtime comparison", "", *markdown_table(table[0], table[1:]), RUNTIME_NOTE, ""]


def _calibrations(decision: Decision) -> list[str]:
    """Each calibrated variant against its plain twin, when the run has one."""
    table = calibration_table(decision)
    if table is None:
        return []
    sentences = [f"- {calibration_sentence(c)}" for c in decision.calibrations]
    return [
        "## Calibrated against plain",
        "",
        *sentences,
        "",
        *markdown_table(table[0], table[1:]),
        CALIBRATION_NOTE,
        "",
    ]


def _embeddings(decision: Decision) -> list[str]:
    """The variants' embedding figures (`run --embeddings`), when measured."""
    measured = [(name, v) for name, v in decision.variants.items() if v.embeddings is not None]
    if not measured:
        return []
    file_mb = {n: m.file_size_bytes / 2**20 for n, m in decision.record.variants.items() if m.file_size_bytes}
    rows = embedding_rows([(escape_markdown(n), file_mb.get(n), v.embeddings, None) for n, v in measured])
    k = measured[0][1].embeddings.k if measured[0][1].embeddings else None
    return ["## Embeddings", "", *markdown_table(rows[0], rows[1:]), f"k = {k}; see docs/embeddings.md.", ""]


def _costs(decision: Decision) -> list[str]:
    """The expected cost per 1,000 extractions, when prices were given."""
    if decision.costs is None:
        return []
    rows = cost_rows(decision.costs)
    return [
        "## Expected cost per 1,000 extractions",
        "",
        *markdown_table(rows[0], rows[1:]),
        f"In parentheses: minus the reference's, with its {decision.gates.confidence:.0%} paired interval. "
        "not counted: no price given; not measured: a priced figure the run did not measure. "
        f"Method: {escape_markdown(decision.costs.method)}.",
        "",
        "Node time per extraction:",
        "",
        *(
            f"- {escape_markdown(name)}: {escape_markdown(how)}"
            for name, how in decision.costs.node_time.items()
        ),
        "",
    ]


def _capacity(decision: Decision, summary: RunSummary | None) -> list[str]:
    """Parallel sequences per variant (the memory model), goodput per load level, and machines."""
    section = capacity_section(decision, summary.load if summary else None)
    if section is None:
        return []
    lines = ["## Capacity", "", escape_markdown(section.title) + ":", ""]
    lines += markdown_table(section.rows[0], section.rows[1:])
    lines += [escape_markdown(section.note), ""]
    machines = section.machine_rows
    if machines:
        lines += [f"### {section.machine_title}", "", *markdown_table(machines[0], machines[1:])]
        lines += [escape_markdown(section.machine_note), ""]
    return lines


def _conditions(summary: RunSummary | None) -> list[str]:
    """The machine's load during each variant's rounds, and the memory model beside its peak."""
    table = measurement_rows(summary) if summary is not None else None
    if table is None:
        return []
    rows = markdown_table(table.header, table.rows)
    return ["## Measurement conditions", "", *rows, escape_markdown(table.note), ""]


def _regressions(decision: Decision) -> list[str]:
    lines = ["## Regression cases (reference right, variant wrong)", ""]
    for name, v in decision.variants.items():
        if v.is_reference or v.status != "ok":
            continue
        found = v.regressions
        exported = decision.regression_sets.get(name)
        where = (
            f" Exported as a dataset: {escape_markdown(exported.path)}." if exported and exported.path else ""
        )
        lines.append(f"- **{escape_markdown(name)}**: {len(found)} case(s).{where}")
        lines += [
            f"  - {escape_markdown(r.case_id)}: {', '.join(map(escape_markdown, r.fields))}"
            for r in found[:20]
        ]
        if len(found) > 20:
            lines.append(f"  - … and {len(found) - 20} more (decision.json has them all)")
    return [*lines, ""]


def _rollback(decision: Decision) -> list[str]:
    rollback = decision.rollback
    if rollback is None:
        return ["## Rollback signals", "", "No variant was chosen, so there is nothing to watch.", ""]
    rows = [
        [s.metric, s.direction, f"{s.threshold:.4g}", f"{s.measured:.4g}", s.derivation]
        for s in rollback.signals
    ]
    return [
        "## Rollback signals",
        "",
        f"Roll {escape_markdown(rollback.variant)} back when any of these holds over a window of at least "
        f"{rollback.window_cases} production calls:",
        "",
        *markdown_table(["metric", "when", "threshold", "measured", "derived as"], rows),
    ]


def render_decision(decision: Decision, *, summary: RunSummary | None = None) -> str:
    """decision.md from the decision (decision.json is its source), with the task-kind figures of
    the run's `summary` (summary.json) after the variants when given."""
    parts = [
        _headline(decision),
        _overview(decision, summary),
        _flips(decision),
        task_figures_section(summary),
        _latency(summary),
        _fidelity(decision),
        _gates(decision),
        _deltas(decision),
        _runtimes(decision),
        _calibrations(decision),
        _embeddings(decision),
        _costs(decision),
        _capacity(decision, summary),
        _conditions(summary),
        _regressions(decision),
        _rollback(decision),
        record_lines(decision, summary),
    ]
    return "\n".join(line for part in parts for line in part)
