"""Token fidelity, the run side: how close each variant's next-token distributions are to the reference's.

`_run_step.py` is the step of `quantgate run` (which variants can be measured, how, and what goes
into the summary); `_measurement.py` measures embedded variants on full logits and Ollama variants
on top-k log-probabilities; each backend's forcing, in its folder
(`quantgate.backends.ollama._ollama_forcing`, `quantgate.backends.openai._openai_forcing`,
`quantgate.backends.llamacpp._embedded_forcing`), makes a model follow the reference's output, and
`_forcings.py` picks a variant's.
The figures themselves (KLD, top-1 agreement, their summaries) are defined in `evaluators.fidelity`.
"""

from quantgate.evaluate.token_fidelity._measurement import (
    measure_ollama_token_fidelity,
    measure_token_fidelity,
)
from quantgate.evaluate.token_fidelity._run_step import token_fidelity_step

__all__ = ["measure_ollama_token_fidelity", "measure_token_fidelity", "token_fidelity_step"]
