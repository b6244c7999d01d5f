import streamlit as st

st.title("1_simplified")
st.write("Coming next.")
