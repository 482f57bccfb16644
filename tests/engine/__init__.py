"""The numpy engine (attention/ outside attention/ui) and the project's static checks: no torch, no Streamlit,
no server. The inner loop."""
