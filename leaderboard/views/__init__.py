"""The leaderboard's pages: scripts that ``st.navigation`` runs (leaderboard/app.py); nothing imports them."""
