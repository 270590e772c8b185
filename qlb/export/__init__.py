"""Exports of what qlb writes to other formats (the report as PDF, printed by a local Chromium)."""
