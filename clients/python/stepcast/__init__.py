"""stepcast: a client of the stepcast service (stepcastd).

    from stepcast import Client
    c = Client("http://127.0.0.1:8750", token)
    c.upload("dlrm", "dlrm_kineto.tar.gz")        # ranks read from the traces
    model = c.build("dlrm", progress=print)       # waits; progress 0..1
    replay = c.replay(model["id"], scale={"gpu": 2})

Every method returns the API's JSON document as plain dicts and lists;
errors of the API raise :class:`StepcastError` (code, status, message).
:func:`to_dataframe` turns a document's rows into a pandas DataFrame when
pandas is installed; :func:`rows` gives the same rows without it.
"""

__version__ = "0.1.0"

from .client import Client, StepcastError
from .frames import rows, to_dataframe
from .traces import trace_rank, trace_units

__all__ = ["Client", "StepcastError", "rows", "to_dataframe", "trace_rank", "trace_units", "__version__"]
