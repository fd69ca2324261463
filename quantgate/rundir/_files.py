"""The names of a run directory's files, and the format version each is written in.

runs/<run-id>/
    summary.json       the run and one entry per variant            (RunSummary)
    records.jsonl      one line per case x variant                  (CaseRecord)
    variants.json      each variant's provenance, runtime, hardware (VariantsFile)
    fidelity.jsonl     token fidelity per variant x case            (FidelityLine)
    noise_floor.jsonl  the reference's answers rerun, per case      (NoiseFloorLine)
    load.jsonl         one line per load-test request               (LoadLine)
    embeddings.json    embedding figures per variant (`embed`)      (EmbeddingsFile)
    qdrant/            the variants' vectors, a local Qdrant store
    decision.json      the decision, its gates and evidence         (Decision)
    decision.md        the same, for people
    dataset/           a copy of the cases evaluated
    regressions/<v>/   each variant's regression cases, as a dataset
    report/            report.html and its charts
"""

from __future__ import annotations

from typing import Final, Literal

SUMMARY_FILE = "summary.json"
RECORDS_FILE = "records.jsonl"
VARIANTS_FILE = "variants.json"
FIDELITY_FILE = "fidelity.jsonl"
NOISE_FLOOR_FILE = "noise_floor.jsonl"
LOAD_FILE = "load.jsonl"
EMBEDDINGS_JSON = "embeddings.json"
QDRANT_DIR = "qdrant"
DECISION_JSON = "decision.json"
DECISION_MD = "decision.md"
DATASET_DIR = "dataset"
REGRESSIONS_DIR = "regressions"
REPORT_DIR = "report"

RUN_FORMAT_VERSION: Final[Literal[1]] = 1
"""Of fidelity.jsonl."""
VARIANTS_FORMAT_VERSION: Final[Literal[4]] = 4
"""Of variants.json. 2: where each variant was evaluated (`placement`: this machine, or a Ray
node), and the machine's host name in its `hardware`. 3: each variant's KV-cache type
(`kv_cache`: `{k, v}`, null when the variant did not set it). 4: an embedded variant's model shape
and weights (`memory_model`, from its GGUF header), which the capacity gate and figures read.
Files of versions 1 to 3 are still read (as version 4, the keys added since unknown)."""
RECORDS_FORMAT_VERSION: Final[Literal[4]] = 4
"""Of records.jsonl. 2: each record counts the calls repeated after retryable errors
(`retries`), so a resumed run summarizes read-back cases exactly as it did when they ran.
3: a record copied from the reference cache names the run that evaluated it (`cached_from`).
4: how the case's answers were obtained (`obtained`: decoded, verified against the reference's, or
verified then decoded), and each attempt's text and `obtained` in `attempt_timings`, with (same
version, keys that may be absent) the reference's `top_logprobs` per token, a verifying
candidate's `fidelity` per position read, and why a server's verification decoded instead
(`unverified_reason`).
Records of versions 1 to 3 are still read (as version 4, the keys added since unknown)."""
SUMMARY_FORMAT_VERSION: Final[Literal[15]] = 15
"""Of summary.json. 2: each variant says whether it is complete and which cases it lacks
(`complete`, `missing_cases`). 3: the options record the gates and the token-fidelity
settings a resumed run goes on with, and each variant how many of its cases a resumed run
read back (`resumed_cases`). 4: each variant's embedding figures (`embeddings`,
`embeddings_error`, from `run --embeddings`). 5: runs in interleaved rounds: each variant's
load time, cold first token, loads and cached cases (`load_s`, `cold_first_token_s`, `loads`,
`cached_cases`), the case-evaluation time spent (`evaluation_s`), a fixed sample named
`fixed` (format 4 said `bootstrap`) and the betting truncation (`betting_truncation`).
6: the sha256 of each data file of the run's copy of its dataset (`dataset.copy_sha256`), which
`--resume` checks. 7: a classification run's figures in each variant (`label_accuracy`,
`macro_f1`, `classes`, `confusion`, ...: `evaluators.classification_figures.ClassificationSummary`; null for
other kinds). 8: a generation run's figures in each variant (`chrf`, `chrf_reference`,
`length_ratio`, ...: `evaluators.chrf.GenerationSummary`; null for other kinds). 9: the tail
of each variant's token fidelity (`kld_p999`, the `delta_p_*` figures, top-1 agreement on
structural and value tokens, and the same per slice: `evaluators.fidelity.TokenFidelitySummary`).
10: the capacity gates in the options' gates (`min_parallel_sequences`, `min_goodput_rps`, and the
settings `capacity_context`, `capacity_memory_gib`). 11: a runtime pair's own token fidelity in its
other member's entry (`runtime_token_fidelity`, `runtime_token_fidelity_base`,
`runtime_token_fidelity_missing`: against the pair's embedded base). 12 (issue 45): how each
variant's answers were obtained (`verified_cases`, `verified_then_decoded_cases`, `decoded_cases`,
`verified_token_share`, `verification_missing`), its flips (`flips`), its latency against the
reference (`latency_against_reference`), the memory model beside its peak (`memory_model_check`); the
run's noise floor (`noise_floor`, `noise_floor_missing`), the machine's load per round
(`machine_load`), and the options `verify`, `latency_cases`, `noise_floor_cases`. 13 (issue 45): a
candidate's token fidelity over the positions it read while verifying (`verified_fidelity`:
`evaluators.verified_fidelity.VerifiedFidelity`). 14 (issue 47): a variant's figures of its task
kind, which 7 to 13 kept flat in its entry (null for the other kinds), are one sub-object tagged
with the kind, `kind_figures` (the kind's `figures_model`: `evaluators.kinds`; null for extraction).
15 (issues 48, 49 and 50): the dataset's calibration cases the run left out of scoring
(`dataset.calibration_cases_left_out`), a tool-calling run's figures per BFCL category
(`kind_figures.by_category`), and the Ray node each `machine_load` part was read on (`node_id`,
`host`). Summaries of versions 1 to 14 are still read (as version 15,
the keys added since unknown, the gates
off, the flat figures of 7 to 13 moved into `kind_figures`: `quantgate.rundir._older_summaries`)."""
NOISE_FLOOR_FORMAT_VERSION: Final[Literal[1]] = 1
"""Of noise_floor.jsonl: the reference's answers to the noise-floor sample, rerun one case at a time."""
LOAD_FORMAT_VERSION: Final[Literal[2]] = 2
"""Of load.jsonl and the summary's `load` section. 2: open-loop Poisson levels and goodput: the
section's arrivals, seed and latency targets, each level's arrivals, rate and seed and its goodput
(`within_targets`, `goodput_rps` and its interval), and each request's client-side queueing
(`queued_s`). Version 1 is still read (as version 2, closed levels, the keys added since unknown)."""
EMBEDDINGS_FORMAT_VERSION: Final[Literal[1]] = 1
"""Of embeddings.json and a summary variant's `embeddings` entry."""
DECISION_FORMAT_VERSION: Final[Literal[9]] = 9
"""Of decision.json. 3: whether the run was complete when decided, and what it lacked
(`run_complete`, `run_problems`). 4: each variant's embedding figures (`embeddings`). 5: the
forecast of each variant still open (`open`), and each delta's descriptive bootstrap interval
beside the interval it is judged by. 6: each variant's KV-cache type in the record (`kv_cache`, as
in variants.json 3), and the tail of each variant's token fidelity (as in summary.json 9).
7: the capacity gates and their settings (as in summary.json 10), each variant's capacity
(`capacity`: parallel sequences at the gates' context and budget, from the memory-model record of
variants.json 4) and, with prices for machines, the machines each variant needs (`costs.machines`),
and the runtime comparisons (`runtimes`: variants of the same model file on other backends) with
the gate `max_runtime_accuracy_drop`; both were added on the same day, before any release, so 7
carries both, and a 7 without `runtimes` reads as none. 8 (issue 45): the flip gate
(`max_flip_share`), each variant's flips and the noise floor's share beside them (`flips`,
`flip_noise_floor`). 9 (issue 48): each calibrated variant against its plain twin
(`calibrations`), and in the record's dataset the calibration cases left out of scoring (as in
summary.json 15). Decisions of versions 2 to 8 are still read (as version 9, without calibrations)."""
