"""Token fidelity, the run side: how close each variant's next-token distributions are to the reference's.

`run_step.py` is the step of `quantgate run` (which variants can be measured, how, and what goes
into the summary); `measurement.py` measures embedded variants on full logits and Ollama variants
on top-k log-probabilities; `ollama_forcing.py` (Ollama's API) and
`quantgate.backends.llamacpp.teacher_forcing` (llama.cpp) make a model follow the reference's output.
The figures themselves (KLD, top-1 agreement, their summaries) are defined in `evaluators.fidelity`.
"""

from quantgate.evaluate.token_fidelity.measurement import (
    measure_ollama_token_fidelity,
    measure_token_fidelity,
)
from quantgate.evaluate.token_fidelity.run_step import token_fidelity_step

__all__ = ["measure_ollama_token_fidelity", "measure_token_fidelity", "token_fidelity_step"]
