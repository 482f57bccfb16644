"""The app under Streamlit's AppTest and its UI code without a browser (and one real server for the fragments)."""
