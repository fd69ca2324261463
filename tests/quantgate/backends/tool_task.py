"""The small tool-calling task both native-tools tests run (Ollama's through its test double, the
`openai:` backend's through a scripted server): two tools, four questions, two few-shot examples."""

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "convert_currency", "description": "",
     "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "to": {"type": "string"}},
                    "required": ["amount", "to"]}}},
]  # fmt: skip
CASES = [
    ("oslo", "Weather in Oslo today?", {"call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}),
    ("joke", "Tell me a joke about cats.", {"call": None}),
    ("paris", "Will it rain in Paris?", {"call": {"name": "get_weather", "arguments": {"city": "Paris"}}}),
    ("eur", "How much is 10 EUR in dollars?",
     {"call": {"name": "convert_currency", "arguments": {"amount": 10, "to": "USD"}}}),
]  # fmt: skip
EXAMPLES = [
    {"id": "ex", "text": "Weather in Rome?",
     "expected": {"call": {"name": "get_weather", "arguments": {"city": "Rome"}}}},
    {"id": "ex-none", "text": "Sing me a song.", "expected": {"call": None}},
]  # fmt: skip
