"""A decision as JUnit XML, the test-report format CI systems read (`--junit FILE`).

One `<testsuite>` per decided run (per task for a suite), one `<testcase>` per variant and gate
(`classname` the variant, `name` the gate):

- a gate that passed is a plain test case;
- a gate that failed is a `<failure>` whose message carries the evidence: the value, the
  threshold, the interval and its method, and the decision's sentence;
- a gate that is inconclusive (the data cannot tell) or not_measured is `<skipped>`, its
  message starting with that status and giving the reason: the gate was not judged either way,
  which is what JUnit's skipped means; CI shows it apart from passes and failures;
- a variant that did not run is one test case named `evaluation` with an `<error>` carrying why.

The suite's properties record the run id, the dataset, the reference, the outcome and each
variant's verdict (`verdict:<variant>`). Written with the standard library's `xml.etree`; the
tests validate it against Jenkins' junit-10.xsd. A character XML 1.0 cannot hold (a control
character of a dataset's name, a lone surrogate) is written as its escape (`\x1b`), so the file
always parses. The file is written in place: a symlink is written through, an existing file keeps
its mode, a new one gets the usual mode (0666 less the umask), and a target that is not a regular
file (a device such as /dev/stdout, a FIFO) is refused.
"""

from __future__ import annotations

import io
import os
import re
import stat
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from evaluators.errors import UsageError
from quantgate.export._decided_runs import DecidedRun
from quantgate.rundir._decision import GateResult, VariantDecision

SKIPPED_STATUSES = ("inconclusive", "not_measured")
"""Gate statuses written as `<skipped>`: judged neither pass nor fail."""

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character XML 1.0 cannot hold, even escaped (https://www.w3.org/TR/xml/#charsets)."""
_FILE_KINDS = {
    stat.S_ISDIR: "a directory",
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
    stat.S_ISFIFO: "a FIFO",
    stat.S_ISSOCK: "a socket",
}


def _number(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.6g}"


def gate_message(gate: GateResult) -> str:
    """One line of a gate's evidence: status, value, threshold, interval and method, sentence."""
    parts = [f"{gate.gate} {gate.status}: value {_number(gate.value)}, threshold {_number(gate.threshold)}"]
    if gate.interval is not None:
        interval = gate.interval
        parts.append(
            f"{interval.confidence:.0%} interval [{_number(interval.low)}, {_number(interval.high)}] "
            f"({interval.method})"
        )
    parts.append(gate.evidence)
    return "; ".join(parts)


def _gate_case(suite: ET.Element, variant: str, gate: GateResult) -> str:
    """Add one gate's test case; return its JUnit result (passed, failure, skipped)."""
    case = ET.SubElement(suite, "testcase", classname=variant, name=gate.gate)
    if gate.status == "pass":
        return "passed"
    message = gate_message(gate)
    if gate.status in SKIPPED_STATUSES:
        ET.SubElement(case, "skipped", message=message, type=gate.status).text = message
        return "skipped"
    ET.SubElement(case, "failure", message=message, type=gate.status).text = message
    return "failure"


def _variant_cases(suite: ET.Element, name: str, variant: VariantDecision) -> list[str]:
    """Add a variant's test cases; return each one's result."""
    if variant.status != "ok":
        case = ET.SubElement(suite, "testcase", classname=name, name="evaluation")
        reason = variant.error or "the variant was not evaluated"
        ET.SubElement(case, "error", message=reason, type="not_evaluated").text = reason
        return ["error"]
    if not variant.gates:
        case = ET.SubElement(suite, "testcase", classname=name, name="gates")
        reason = "no gate was judged for this variant"
        ET.SubElement(case, "skipped", message=reason, type="not_measured").text = reason
        return ["skipped"]
    return [_gate_case(suite, name, gate) for gate in variant.gates]


def _properties(suite: ET.Element, run: DecidedRun) -> None:
    decision, record = run.decision, run.decision.record
    values = {
        "run_id": record.run_id,
        "run_dir": str(run.run_dir),
        "task": run.task,
        "dataset": record.dataset.name,
        "dataset_sha256": record.dataset.sha256,
        "reference": decision.reference,
        "recommended": decision.recommended if decision.recommended is not None else "none",
        "outcome": decision.outcome,
        "exit_status": str(decision.exit_status),
        "decided_at": record.decided_at,
        **{f"verdict:{name}": variant.verdict for name, variant in decision.variants.items()},
    }
    properties = ET.SubElement(suite, "properties")
    for key, value in values.items():
        if value is not None:
            ET.SubElement(properties, "property", name=key, value=str(value))


def junit_testsuite(run: DecidedRun) -> ET.Element:
    """One decided run as a `<testsuite>` (see the module's docstring)."""
    suite = ET.Element("testsuite", name=f"quantgate {run.name}", id=run.decision.record.run_id)
    suite.set("timestamp", run.decision.record.decided_at)
    _properties(suite, run)
    results = [r for name, v in run.decision.variants.items() for r in _variant_cases(suite, name, v)]
    for attribute, result in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        suite.set(attribute, str(results.count(result)))
    suite.set("tests", str(len(results)))
    return suite


def junit_document(runs: Sequence[DecidedRun]) -> ET.ElementTree:
    """`<testsuites>` holding one `<testsuite>` per decided run, with the totals (what XML cannot hold
    escaped)."""
    root = ET.Element("testsuites", name="quantgate")
    suites = [junit_testsuite(run) for run in runs]
    root.extend(suites)
    for attribute in ("tests", "failures", "errors"):
        root.set(attribute, str(sum(int(s.get(attribute, "0")) for s in suites)))
    ET.indent(root)
    _xml_safe(root)
    return ET.ElementTree(root)


def _xml_text(text: str) -> str:
    """`text` with each character XML 1.0 cannot hold written as its escape (`\\x1b`, `\\ud800`)."""
    return _NOT_XML.sub(lambda found: ascii(found.group())[1:-1], text)


def _xml_safe(root: ET.Element) -> None:
    """Escape what XML cannot hold in every text and attribute value under `root`, in place."""
    for element in root.iter():
        if element.text is not None:
            element.text = _xml_text(element.text)
        for key, value in element.attrib.items():
            element.set(key, _xml_text(value))


def not_a_file(path: Path) -> str | None:
    """What `path` is (after symlinks) if it exists and is not a regular file, else None."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    return _kind(mode)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _FILE_KINDS.items() if test(mode)), "not a regular file")


def write_junit(path: Path, runs: Sequence[DecidedRun]) -> None:
    """Write the runs' JUnit XML to `path`, in place (see the module's docstring).

    Raises:
        UsageError: `path` is not a regular file (a device, a FIFO, a directory).
    """
    path = Path(path)
    buffer = io.BytesIO()
    junit_document(runs).write(buffer, encoding="utf-8", xml_declaration=True)
    content = buffer.getvalue() + b"\n"
    # O_NONBLOCK: opening a FIFO without a reader fails at once (ENXIO) instead of waiting for one
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o666)
    with os.fdopen(descriptor, "wb") as stream:
        kind = _kind(os.fstat(descriptor).st_mode)
        if kind is not None:
            raise UsageError(f"--junit {path}: is {kind}, not a regular file; give a file name")
        os.set_blocking(descriptor, True)
        stream.truncate(0)
        stream.write(content)
