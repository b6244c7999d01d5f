import streamlit as st

st.title("2_trainable")
st.write("Coming next.")
