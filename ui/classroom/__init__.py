"""The Streamlit side of class polls: the poll page's views."""
