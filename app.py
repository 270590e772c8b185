"""qlb dashboard: the router only (see dashboard/routing.py for the page list)."""
from dashboard.routing import run_router

run_router()
