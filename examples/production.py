"""Using the variant quantgate chose, in production, end to end on the embedded default.

    python examples/production.py RUN_DIR                # a run directory with its decision
    python examples/production.py                        # no run yet: evaluate 3 cases first
    python examples/production.py --variants FILE.toml   # ... with these variants, not the ladder

Without RUN_DIR the example first does what `quantgate run --limit 3 --no-token-fidelity`
does: it builds the default ladder if missing (F16 reference, Q8_0, Q5_K_M, Q4_K_M of
Gemma 3 270M), evaluates each variant on 3 cases of `contacts-events`, writes
`runs/<run-id>/` in the current directory and decides. Three cases cannot show a quantized
variant safe (the gates ask for 30), so that decision keeps the F16 reference.

Then, as a production service would:

1. `load_chosen`: the decision's recommended variant, its model file checked by sha256.
2. `Event`: the application's own record type, a pydantic model. Its fields are those of
   the evaluated dataset, so the run's few-shot examples are used; a different model would
   be prompted zero-shot unless given `examples=`.
3. `open_extractor`: the chosen variant's chat model, constrained to `Event`, in the context
   of the very extraction graph that was evaluated.
4. An online guard on the decision's rollback signals, fed two ways: by the extractor
   (`extractor.extract`) and by a guard node in a production graph built around the
   extraction graph.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any, Literal

import psutil
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field

from graphs import ExtractionContext, build_extraction_graph
from quantgate import (
    OnlineGuard,
    RunOptions,
    build_ladder,
    decide,
    load_chosen,
    load_dataset,
    load_variants_file,
    open_extractor,
    run_evaluation,
)
from quantgate.production import GuardedExtractionState, SignalReading, guard_node


class Organizer(BaseModel):
    """Who organizes the event or sends the invitation."""

    name: str | None = Field(None, description="Name of the organizer, without titles. null if not given.")
    email: str | None = Field(None, description="Email address of the organizer, as written.")
    phone: str | None = Field(None, description="Phone number of the organizer, as written.")


class Event(BaseModel):
    """Event, meeting or appointment details."""

    event_name: str | None = Field(
        None, description="Name or title of the event as written; null if generic."
    )
    event_type: Literal["meeting", "conference", "workshop", "webinar", "appointment", "party", "other"] = (
        Field(description="Kind of event, one of the listed values.")
    )
    date: dt.date | None = Field(None, description="Date the event takes place, as YYYY-MM-DD.")
    start_time: str | None = Field(None, description="Start time in 24-hour HH:MM format.")
    location: str | None = Field(None, description="Venue and/or address and/or city; null if online only.")
    online: bool | None = Field(None, description="true if attended online; null if the text does not say.")
    organizer: Organizer = Field(description="The person or organization that organizes the event.")
    attendees: list[str] = Field(default_factory=list, description="Names of the people attending.")
    attendee_count: int | None = Field(None, description="Expected or maximum number of attendees.")
    fee: float | None = Field(None, description="Price for one person to attend, as a plain number.")


TEXTS = [
    "Hi all, the quarterly planning meeting is on Tuesday 14 January 2025 at 10:00 in room 4B, "
    "12 Harbour Street, Leeds. In person only. Please confirm by Friday. Thanks, Priya Shah "
    "(priya.shah@northwind.example, 0113 496 0000)",
    "Webinar gratuito «Introducción a la factura electrónica» el jueves 6 de febrero de 2025 a las "
    "18:30 (hora de Madrid), por Zoom. Plazas limitadas a 100. Organiza: Asociación Pymes Digitales.",
    "Reminder: your dental check-up with Dr. Okafor is booked for 03/03/2025 at 2:15 pm at "
    "Riverside Dental, 8 Mill Lane, Bristol. The consultation costs £45. Patient: Tom Baker.",
]


def evaluate_first(variants_file: Path | None) -> Path:
    """Evaluate on 3 cases of the default dataset and decide, as `quantgate run --limit 3` would."""
    variant_set = load_variants_file(variants_file) if variants_file else build_ladder()[0]
    options = RunOptions(limit=3, token_fidelity=False, progress=False)
    run_dir = run_evaluation(load_dataset("contacts-events"), variant_set, options=options)
    decide(run_dir)
    return run_dir


def alert(crossed: list[SignalReading]) -> None:
    """The guard's callback: in a real service, page someone or switch traffic back."""
    for reading in crossed:
        print(f"ROLLBACK SIGNAL: {reading}")


def _rss_mb() -> float:
    """This process's resident memory in MiB (the embedded model is loaded here)."""
    return float(psutil.Process().memory_info().rss) / 2**20


def production_graph(guard: OnlineGuard) -> Any:
    """The application's graph: the evaluated extraction graph as a node, then the guard."""
    builder = StateGraph(GuardedExtractionState, context_schema=ExtractionContext)
    builder.add_node("extraction", build_extraction_graph())
    builder.add_node("guard", guard_node(guard, memory_mb=_rss_mb))  # embedded: the model is in this process
    builder.add_edge(START, "extraction")
    builder.add_edge("extraction", "guard")
    builder.add_edge("guard", END)
    return builder.compile(name="production")


def main(argv: list[str] | None = None) -> int:
    """Run the example; exit status 0 when every text gave a valid record."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", nargs="?", type=Path, help="a run directory with decision.json")
    parser.add_argument("--variants", type=Path, help="variants .toml to evaluate when no RUN_DIR is given")
    args = parser.parse_args(argv)
    run_dir = args.run_dir or evaluate_first(args.variants)

    chosen = load_chosen(run_dir)
    kind = "the reference" if chosen.is_reference else "a quantized variant"
    print(f"decision of {run_dir}: {chosen.variant.name} ({kind}), model {chosen.variant.model}")
    guard = OnlineGuard.from_decision(chosen.decision, on_trip=alert)
    print(f"guard: {len(guard.signals)} rollback signals over the last {guard.window} calls")

    valid = 0
    with open_extractor(chosen, schema=Event, guard=guard) as extractor:
        print(f"few-shot examples: {extractor.examples_from}")
        event = extractor.extract(TEXTS[0])  # in plain code: a typed record (raises if none is valid)
        print(f"extract:  {event.model_dump_json()}")
        valid += 1
        app = production_graph(guard)  # inside a LangGraph application: state out, guard included
        for text in TEXTS[1:]:
            state = app.invoke({"text": text}, context=extractor.context)
            shown = Event.model_validate(state["record"]).model_dump_json() if state["valid"] else state
            print(f"graph:    {shown}  (guard tripped: {state['guard_tripped']})")
            valid += bool(state["valid"])

    status = guard.status()
    print(f"guard after {status.observed} calls: tripped={status.tripped}")
    for reading in status.readings:
        print(f"  {reading}")
    return 0 if valid == len(TEXTS) else 1


if __name__ == "__main__":
    sys.exit(main())
