"""The teaching features' Streamlit side: Predict first and Spot the bug, Explain a cell,
Break it, presenter mode, slides."""
