"""What a valid input is: the ontology, the pydantic record schemas and the file readers.

The lowest room: it imports no other part of qlb, no database and no Streamlit."""
