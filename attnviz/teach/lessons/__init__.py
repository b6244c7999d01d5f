"""What each page shows, built from its traces: panels, checks and claims (no Streamlit)."""
