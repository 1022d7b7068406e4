"""Other projects' test suites run against einstride (see conftest.py)."""
