"""Small schemas used across evaluator tests."""

from typing import Any

INVOICE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "vendor": {"type": ["string", "null"]},
        "total": {"type": ["number", "null"]},
        "items_count": {"type": ["integer", "null"]},
        "paid": {"type": ["boolean", "null"]},
        "issue_date": {"type": ["string", "null"], "format": "date"},
        "currency": {"type": ["string", "null"], "enum": ["EUR", "USD", None]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "customer": {
            "type": "object",
            "properties": {
                "name": {"type": ["string", "null"]},
                "email": {"type": ["string", "null"]},
            },
            "required": ["name", "email"],
        },
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "amount": {"type": ["number", "null"]},
                },
                "required": ["description", "amount"],
            },
        },
    },
    "required": [
        "vendor",
        "total",
        "items_count",
        "paid",
        "issue_date",
        "currency",
        "tags",
        "customer",
        "items",
    ],
}

GOLD: dict[str, Any] = {
    "vendor": "Papelería Núñez",
    "total": 1234.56,
    "items_count": 2,
    "paid": False,
    "issue_date": "2024-03-03",
    "currency": "EUR",
    "tags": ["office", "urgent"],
    "customer": {"name": "Ana Gómez", "email": None},
    "items": [
        {"description": "Folios A4", "amount": 34.56},
        {"description": "Impresora", "amount": 1200.0},
    ],
}
