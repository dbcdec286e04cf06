"""Reporting: terminal tables, JSON documents, (later) figures and HTML."""
