"""The engine's public API: what a worker author imports.

from engine import Worker, Context, FunctionError

worker = Worker("example")

@worker.function("example::echo")
async def echo(req: EchoIn, ctx: Context) -> EchoOut:
    return EchoOut(text=req.text)

if __name__ == "__main__":
    worker.run()
"""

from engine._client import Client
from engine._connect import connect
from engine._context import Context
from engine._errors import FunctionError
from engine._protocol import subject_for
from engine._state import CasConflict, Change, Entry, State
from engine._triggers import TRIGGERS_BUCKET, HttpRequest, HttpResponse, TriggerSpec
from engine._worker import FunctionSpec, Worker

__all__ = [
    "TRIGGERS_BUCKET",
    "CasConflict",
    "Change",
    "Client",
    "Context",
    "Entry",
    "FunctionError",
    "FunctionSpec",
    "HttpRequest",
    "HttpResponse",
    "State",
    "TriggerSpec",
    "Worker",
    "connect",
    "subject_for",
]
