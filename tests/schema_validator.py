"""A jsonschema validator of a pydantic model's JSON Schema: the independent reference the schema
agreement tests check `dse schema hw` / `dse schema study` with."""

from __future__ import annotations

import jsonschema
from pydantic import BaseModel


def validator_of(model: type[BaseModel]) -> jsonschema.protocols.Validator:
    schema = model.model_json_schema()
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)
