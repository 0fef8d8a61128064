"""Trigger workers: processes hosting trigger plug-ins (`python -m workers.triggers http cron`)."""
