"""The `http` trigger: method + path → function, served by starlette's stack on uvicorn."""
