import streamlit as st

st.title("4_multihead")
st.write("Coming next.")
