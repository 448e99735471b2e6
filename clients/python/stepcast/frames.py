"""Tables from the API's documents: :func:`rows` flattens a document's list
(the steps of a replay or critical path, jobs, models, tokens, traces) into
flat dicts, nested objects becoming dotted columns (``breakdown.host``);
:func:`to_dataframe` makes a pandas DataFrame of them when pandas is
installed (it is not a dependency)."""

from __future__ import annotations

from typing import Any, Dict, List

# The list a document holds its rows in, by the key the API uses.
_ROW_KEYS = ("steps", "jobs", "models", "tokens", "traces", "traceEvents")


def _flatten(obj: Dict[str, Any], prefix: str, out: Dict[str, Any]) -> Dict[str, Any]:
    for k, v in obj.items():
        if isinstance(v, dict):
            _flatten(v, f"{prefix}{k}.", out)
        else:
            out[prefix + k] = v
    return out


def rows(doc: Any) -> List[Dict[str, Any]]:
    """Flat rows of a document (or of a list of objects)."""
    items = doc
    if isinstance(doc, dict):
        key = next((k for k in _ROW_KEYS if isinstance(doc.get(k), list)), None)
        if key is None:
            raise ValueError(f"no rows in this document (it has none of {', '.join(_ROW_KEYS)})")
        items = doc[key]
    if not isinstance(items, list):
        raise ValueError("rows() takes an API document or a list of objects")
    return [_flatten(x, "", {}) if isinstance(x, dict) else {"value": x} for x in items]


def to_dataframe(doc: Any) -> Any:
    """A pandas DataFrame of :func:`rows` (doc). Raises ImportError without pandas."""
    try:
        import pandas
    except ImportError:
        raise ImportError("to_dataframe() needs pandas (pip install pandas); "
                          "stepcast.rows() gives the same rows as a list of dicts") from None
    return pandas.DataFrame(rows(doc))
