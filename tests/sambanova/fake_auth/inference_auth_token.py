"""A stand-in for the course's inference_auth_token.py (argonne-lcf/inference-endpoints) that speaks
its API: ``get_access_token()`` returns the access token (the real one refreshes it through Globus).
It reads the token from LABKIT_FAKE_GLOBUS_TOKEN so a test decides what it is."""

import os


def get_access_token():
    return os.environ["LABKIT_FAKE_GLOBUS_TOKEN"]
