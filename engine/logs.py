"""Log records on the bus: every engine process copies its records (INFO and above) to the
bounded `ENGINE_LOGS` stream, one JSON `LogRecord` per message on `engine.logs.<service>`."""

from engine._logs import LOGS_STREAM, LOGS_SUBJECT, LogRecord

__all__ = ["LOGS_STREAM", "LOGS_SUBJECT", "LogRecord"]
