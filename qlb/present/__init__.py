"""Presentation, pure: the stakeholder report's HTML, the shared Plotly figures and the palette."""
