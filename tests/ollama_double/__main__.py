"""`python -m tests.ollama_double`: start the Ollama TEST DOUBLE (see the package docstring)."""

from tests.ollama_double.server import main

main()
