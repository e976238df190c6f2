"""The scheduler: registration, deterministic ranks, barriers, heartbeats, progress and status."""
from sparkps.scheduler.client import fetch_status, format_status
from sparkps.scheduler.node import Scheduler

__all__ = ["Scheduler", "fetch_status", "format_status"]
