"""Deployment helpers run at image build time (no Streamlit at run time)."""
