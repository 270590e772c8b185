"""The run layer: the only engine code that opens DuckDB. Each module loads what one audit needs
from the warehouse, calls the pure rooms, and stores the result."""
