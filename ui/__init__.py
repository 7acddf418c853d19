"""The Streamlit dashboard (`foresight dashboard`): sources, timeline, transcript, alerts, search, health."""
