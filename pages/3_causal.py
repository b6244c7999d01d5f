import streamlit as st

st.title("3_causal")
st.write("Coming next.")
