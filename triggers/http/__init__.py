"""The `http` trigger: method + path → function, served by starlette's stack on uvicorn."""

from triggers.http.secret import bearer_matches, load_secret
from triggers.http.server import HttpTrigger
from triggers.http.settings import HttpSettings

__all__ = ["HttpSettings", "HttpTrigger", "bearer_matches", "load_secret"]
